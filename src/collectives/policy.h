// Which codec a collective call uses: a communicator's codec policy, resolved once at init.
// Compression applies to AllReduce and ReduceScatter with SUM or AVG, and AllGather and
// Send/Recv, on the types the codec encodes (fp32/fp16/bf16), at or above the threshold of the
// entry that decides the call; every other op, type or size takes the exact path (never a
// silently different op). Send and Recv share one entry (SENDRECV) so that both ends of a
// message decide alike; the op is not looked at.
//
// The policy is an ordered list of rules (policy_file.h): first the rules of the policy file
// (COCCL_POLICY / cocclConfig_t.policy) whose communicator fields match this communicator, in
// file order, then the default rule, one entry per collective from COCCL_CODEC* / the config's
// codec fields (codecSendRecv does not fall back to the default `codec`: lossy point-to-point
// is asked for by name) with COCCL_COMPRESS_MIN_BYTES. The first rule whose collective, type
// and byte range match a call decides it. Entries: policy_entry.h.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "coccl.h"
#include "codecs/codec.h"
#include "collectives/policy_entry.h"
#include "collectives/policy_file.h"
#include "collectives/request.h"
#include "comm/config.h"

namespace coccl {

// The collectives a codec applies to: AllReduce, ReduceScatter, AllGather, Send and Recv (one
// entry for both; others: exact).
using CollKind = Coll;

class CodecPolicy {
 public:
  // The default rule alone. Parses every spec up front (throws cocclInvalidArgument naming the
  // bad spec).
  explicit CodecPolicy(const PolicyConfig& cfg);
  // The rules of `file` that match `comm` (file may be null), then the default rule. Throws
  // cocclInvalidArgument as PolicyRule::matchesComm does.
  CodecPolicy(const PolicyConfig& cfg, const PolicyFile* file, const CommFacts& comm);

  struct Choice {
    const Codec* codec = nullptr;  // nullptr: exact
    const Codec* inter = nullptr;  // a two-level entry's inter-node codec
    const char* name = "none";     // what the statistics show: the codec's name or the hier spec
    // Uncompressed (codec nullptr): who runs it on device buffers, as the deciding rule asks.
    ExactPath exact = ExactPath::Default;
    // Compressed AllGather: the deciding rule asks the NCCL shim for a weight-difference
    // AllGather ("delta": docs/policy.md).
    bool delta = false;
  };
  // The codec for this call. `bytes`: the whole message (logicalBytes of the request: all
  // ranks' blocks for ReduceScatter and AllGather); `count`: the request's count (elements of
  // one rank's block for ReduceScatter and AllGather, of the message otherwise). `forced`
  // (per-call choice) wins over the policy, the size threshold and the size check, but not over
  // type/op support. The deciding entry's codec is skipped where its payload would not be
  // smaller than the input, and where it refuses `count` (encodedBytes 0, e.g. tah's counts
  // that are not whole rows): such calls run exact. A forced codec that refuses `count` throws
  // cocclInvalidArgument naming the count and the codec's block (refusesCount). `callNo`: the
  // call's number as a rule's "warmup_calls" counts it (Communicator: a collective's call
  // number, a Send/Recv's message number between its pair); a rule that decides a call numbered
  // below its warm-up leaves it exact. kNoCallNo (queries): past every warm-up.
  // `dir`: a Send/Recv message's direction (a rule's "direction" matches it; Any: a query, which
  // rules of either direction match, the first deciding).
  static constexpr uint64_t kNoCallNo = UINT64_MAX;
  Choice choose(CollKind kind, cocclDataType_t dt, cocclRedOp_t op, size_t bytes, size_t count,
                const Codec* forced, uint64_t callNo = kNoCallNo, P2PDir dir = P2PDir::Any) const;
  const Codec* select(CollKind kind, cocclDataType_t dt, cocclRedOp_t op, size_t bytes,
                      size_t count, const Codec* forced, uint64_t callNo = kNoCallNo,
                      P2PDir dir = P2PDir::Any) const {
    return choose(kind, dt, op, bytes, count, forced, callNo, dir).codec;
  }
  // Whether `c` refuses `count` elements of dt: encodedBytes(count) is 0 for count > 0, which
  // the plug-in ABI lets a codec answer for counts it does not take (coccl_codec.h, "Sizes").
  static bool refusesCount(const Codec& c, size_t count, cocclDataType_t dt) {
    return count > 0 && c.encodedBytes(count, dt) == 0;
  }
  // Whether a per-call codec would be used for this call (compressible) but refuses `count`:
  // choose() throws for it; Send/Recv and AllGatherDelta keep it for their header check first.
  static bool forcedRefuses(const Codec* forced, CollKind kind, cocclDataType_t dt,
                            cocclRedOp_t op, size_t count) {
    return forced && compressible(forced, kind, dt, op) && refusesCount(*forced, count, dt);
  }
  // Whether a rule asks for the real NCCL's exact path (init then brings NCCL up beside coccl's
  // kernels where it would not by default: device_executors.h).
  bool asksForNcclExact() const;
  static bool compressible(const Codec* c, CollKind kind, cocclDataType_t dt, cocclRedOp_t op);

  // The resolved policy, one line per rule (the same text on every rank of a communicator: it
  // is what init agrees on and what COCCL_DEBUG=INFO prints):
  //   "policy file PATH line L: allreduce dtype bfloat16 bytes [1M, inf): fp8_ash_ds from 64K"
  //   "default: allreduce none from 64K" ...; a rule with "exact" ends " exact on nccl", one
  //   with "delta" " delta".
  std::vector<std::string> describe() const;
  // The members' world ranks the policy was resolved for (CommFacts::worldRanks).
  const std::vector<int>& worldRanks() const { return worldRanks_; }

 private:
  struct Rule {
    std::string source;  // "policy file PATH line L" or "default"
    PolicyRule match;    // its call fields (and, for the default, colls only)
    int64_t minBytes;
  };
  std::vector<Rule> rules_;
  std::vector<int> worldRanks_;
};

}  // namespace coccl
