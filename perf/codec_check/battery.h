// The codec conformance battery (coccl_codec_check, issue 14): every check a codec must pass to
// serve coccl's collectives, written against the Codec interface (src/codecs/codec.h) only, so
// any codec the registry makes — built-in today, plug-ins later — runs through the same checks.
// README "Codec conformance checker" says what each check means.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codecs/codec.h"

namespace coccl {
namespace check {

struct Options {
  bool quick = false;     // smaller inputs, no count 1000003, fewer random payloads
  std::string manifest;   // tp_tensors_manifest.json of real tensors ("" = none)
  int threads = 4;        // threads of the concurrent determinism run (compared with 1)
  uint64_t seed = 14;     // every input is drawn from this seed
  std::string against;    // another build of the same plug-in (.so) to compare bytes with ("" = none)
};

struct CheckResult {
  std::string name;     // "bytes_written", "roundtrip normal", ...
  bool pass = true;
  std::string numbers;  // what was measured, e.g. "relL2 0.65% maxAbs 0.021 err/bound 0.29"
  std::string detail;   // the first violation (empty when it passed)
};

// Runs the whole battery on c. Never throws: a check that throws is a FAIL naming the error.
std::vector<CheckResult> runBattery(const Codec& c, const Options& opt);

// The table coccl_codec_check prints: one row per check, then the first violation of each
// failed check.
std::string formatTable(const Codec& c, const std::vector<CheckResult>& results);

bool allPassed(const std::vector<CheckResult>& results);

// The individual checks (runBattery calls them in this order).
CheckResult checkBytesWritten(const Codec& c, const Options& opt);
CheckResult checkDeterminism(const Codec& c, const Options& opt);
std::vector<CheckResult> checkRoundTrip(const Codec& c, const Options& opt);  // one per input
CheckResult checkPartialBlocks(const Codec& c, const Options& opt);
CheckResult checkNonFinite(const Codec& c, const Options& opt);
CheckResult checkDecodeAccumulate(const Codec& c, const Options& opt);  // battery_accumulate.cc
CheckResult checkDecodeReduceEncode(const Codec& c, const Options& opt);
CheckResult checkRandomPayloads(const Codec& c, const Options& opt);
CheckResult checkBoundedReads(const Codec& c, const Options& opt);  // battery_reads.cc
CheckResult checkRealData(const Codec& c, const Options& opt);  // only with opt.manifest
CheckResult checkAgainst(const Codec& c, const Options& opt);   // battery_compare.cc, only with opt.against

}  // namespace check
}  // namespace coccl
