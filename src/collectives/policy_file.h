// Policy files (COCCL_POLICY / cocclConfig_t.policy; the format: docs/policy.md). A file is a
// JSON object {"rules": [RULE, ...]}; each RULE an object of optional match fields and the
// choice it makes:
//   communicator: "name" (glob over the communicator's name, cocclConfig_t.commName /
//                 ncclConfig_t.commName; '*' and '?'), "nranks" (its size), "members" (the set
//                 of its members' world ranks), "stride" (its members' world ranks, sorted, step
//                 by this much: 1 for Megatron's TP groups, TP x PP for its DP groups);
//   call:         "collective" ("allreduce", "reducescatter", "allgather", "sendrecv", or a
//                 list; absent: the three collectives, not sendrecv: lossy point-to-point is
//                 asked for by name), "dtype" (a type name or a list: "bfloat16"/"bf16",
//                 "half"/"fp16", "float"/"fp32", ...), "bytes" {"from": N, "below": M}
//                 (the call's bytes as the threshold counts them, from N inclusive to M
//                 exclusive; integers or "64K"/"1M"/"1G" strings);
//   choice:       "codec" (required: a codec spec, "none", or "hier:intra=..,inter=.."),
//                 "min_bytes" (the threshold for this rule; absent: COCCL_COMPRESS_MIN_BYTES /
//                 cocclConfig_t.compressMinBytes), "exact" ("nccl" or "coccl": who runs the
//                 calls the rule leaves uncompressed on device buffers; absent: the
//                 communicator's default, COCCL_DEVICE_EXACT; collectives only), "delta"
//                 (true: the NCCL shim runs the AllGather calls the rule compresses as a
//                 weight-difference AllGather against a reference it keeps; allgather rules
//                 with a codec only; coccl's own cocclAllGather is not changed by it),
//                 "warmup_calls" (N: the calls the rule decides run exact while their number is
//                 below N, TAH-Quant's uncompressed warm-up; a collective's number counts the
//                 communicator's collectives, a Send/Recv's the messages between its two ranks
//                 in its direction, both from 0 and the same on every rank involved).
// The first rule that matches a call decides it; the COCCL_CODEC* variables are the final
// default rule. Every error is cocclInvalidArgument "policy file 'PATH' line L: ...".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/policy_entry.h"

namespace coccl {

// Bits of the collectives a rule takes (by cocclCollKind_t value).
enum : unsigned {
  kPolicyAllReduce = 1u << 0,
  kPolicyReduceScatter = 1u << 1,
  kPolicyAllGather = 1u << 2,
  kPolicySendRecv = 1u << 3,
  kPolicyCollectives = kPolicyAllReduce | kPolicyReduceScatter | kPolicyAllGather,
  kPolicyAllKinds = kPolicyCollectives | kPolicySendRecv,
};
constexpr uint32_t kPolicyAllTypes = (1u << cocclNumTypes) - 1;

// What a communicator knows about itself when it resolves its policy (the same on every rank).
struct CommFacts {
  std::string name;             // "" when the program gave none
  int nranks = 1;
  std::vector<int> worldRanks;  // worldRanks[r]: the world rank of rank r
};

// A Send/Recv message's direction within its communicator: Up from a lower rank to a higher one,
// Down the other way (Any: not a message, or either way).
enum class P2PDir { Any, Up, Down };

struct PolicyRule {
  int line = 0;  // of the rule's '{'
  // The communicator (absent: any).
  bool hasName = false;
  std::string name;          // a glob
  int nranks = 0;            // 0: any
  std::vector<int> members;  // sorted distinct world ranks; empty: any
  int64_t stride = 0;        // 0: any
  // The call.
  unsigned colls = kPolicyCollectives;  // kPolicy* bits
  uint32_t dtypes = kPolicyAllTypes;    // bit per cocclDataType_t
  uint64_t bytesFrom = 0, bytesBelow = UINT64_MAX;
  // "direction" (sendrecv rules only): the messages from a lower rank to a higher one (Up: a
  // pipeline's activations, when its stages are in rank order) or the other way (Down: their
  // gradients); Any: both.
  P2PDir direction = P2PDir::Any;
  // The choice.
  PolicyEntry entry;
  int64_t minBytes = -1;  // -1: the communicator's threshold
  ExactPath exact = ExactPath::Default;  // "exact"
  bool delta = false;                    // "delta" (allgather rules only)
  uint64_t warmupCalls = 0;  // "warmup_calls": calls numbered below it run exact (CodecPolicy)

  // Whether the communicator fields match. Throws cocclInvalidArgument when the rule asks for
  // members or stride and the world ranks are not distinct (not known: see docs/policy.md).
  bool matchesComm(const CommFacts& comm, const std::string& path) const;
  // The call fields as text: "allreduce,reducescatter dtype bfloat16 bytes [1M, 64M)".
  std::string callText() const;
};

struct PolicyFile {
  std::string path;
  std::vector<PolicyRule> rules;
};

// Parses the text of a policy file (`path` names it in messages). Throws cocclInvalidArgument
// "policy file 'PATH' line L[, column C]: WHAT" for a JSON syntax error, an unknown key, a value
// of the wrong type or range, a bad codec spec (the spec parser's message), and a rule that can
// never match (an empty list, an empty byte range, members that contradict nranks or stride, a
// codec that encodes none of the rule's types, min_bytes at or past the range's end, or every
// call it would match taken by an earlier rule).
PolicyFile parsePolicyText(const std::string& text, const std::string& path);
// Reads and parses `path` (cocclInvalidArgument also when it cannot be read or is over 1 MiB).
PolicyFile loadPolicyFile(const std::string& path);

// "1M" for 1048576, "inf" for UINT64_MAX, else the decimal number.
std::string bytesText(uint64_t b);

}  // namespace coccl
