// The nccl-tests-style size sweep, run by every rank; rank 0 prints.
#pragma once

#include <memory>
#include <string>

#include "args.h"
#include "runtime.h"
#include "table.h"

namespace cocclperf {

// Codec handles of one rank: `none` always, `codec` for --codec SPEC (explicit mode).
struct RankCodecs {
  cocclCodec_t none = nullptr;
  cocclCodec_t codec = nullptr;
  RankCodecs(const Options& o);
  ~RankCodecs();
  RankCodecs(const RankCodecs&) = delete;
  RankCodecs& operator=(const RankCodecs&) = delete;
  cocclCodec_t callCodec() const { return codec ? codec : none; }
};

// Gathers pid and hostname of every rank (through coccl) and fills the RunInfo rank 0 prints.
RunInfo gatherRunInfo(const Rank& rk, const Options& o, const Launch& l, const RankCodecs& c);

// Returns the exit status (the same on every rank): 1 if any #wrong or ident failure.
int runSweep(const Rank& rk, const Options& o, const Launch& l);

}  // namespace cocclperf
