// Init-time agreement: every rank takes part, and every rank gets the same answer. Used by
// every handshake that decides whether something is on for the whole communicator (device
// executors, CUDA IPC region, NCCL communicator, staging sizes), so that no rank ends up using
// a path its peers turned off.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/bootstrap.h"

namespace coccl {

// Collective over `bs`. Each rank passes "" when it can go on, else why it cannot. Returns ""
// on every rank when every rank passed "", else on every rank the reason of the lowest failing
// rank as "rank R: <why>" (why cut to 400 characters). Throws only when the bootstrap fails.
std::string agree(Bootstrap& bs, const std::string& failure);

// A named value every rank must hold equally (a configuration the protocol depends on).
struct AgreedValue {
  const char* name;  // what the user sets, e.g. "COCCL_CHUNK_BYTES"
  uint64_t value;
};

// Collective over `bs` (every rank passes the same names in the same order, at most 16).
// Returns "" on every rank when every rank's values equal rank 0's, else on every rank
// "<name> differs across ranks (<v0> on rank 0, <vr> on rank R)" for the first difference.
std::string agreeValues(Bootstrap& bs, const std::vector<AgreedValue>& values);

}  // namespace coccl
