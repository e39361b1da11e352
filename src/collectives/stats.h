// Statistics of the last call (cocclCommGetLastCollStats) and the wire-byte formulas the
// executors share. Naming: the algorithm is "two-shot", "ring", "direct", "chain" or "p2p" when
// coccl's own code runs it (host or CUDA IPC), "<algorithm>/nccl" when coccl's algorithm moves
// its bytes over NCCL, and "nccl" when NCCL's own collective runs the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/layout.h"

namespace coccl {

struct CollStats {
  size_t logicalBytes = 0;   // the user's message (request.h logicalBytes)
  size_t wireBytesSent = 0;  // bytes this rank sent, payloads as encoded
  const char* codec = "none";
  const char* algorithm = "";
};

// Totals of one kind of call over a communicator's life (calls that reached coccl; the shim
// forwards what coccl does not compress to NCCL directly). Printed when the communicator is
// destroyed, with COCCL_DEBUG=INFO, so that a run shows which codec each communicator used.
struct CollTotals {
  uint64_t calls = 0, compressed = 0;
  uint64_t logicalBytes = 0, wireBytes = 0;  // as CollStats, summed
  std::string codec;                         // the last compressed call's codec
  void add(const CollStats& s) {
    ++calls;
    logicalBytes += s.logicalBytes;
    wireBytes += s.wireBytesSent;
    if (std::strcmp(s.codec, "none") != 0) {
      ++compressed;
      if (codec != s.codec) codec = s.codec;
    }
  }
};

// Two-shot AllReduce over `shards` (owner j reduces shard j): this rank sends every other
// owner its input shard and its own reduced shard to the p-1 others. bytesOf(n): wire bytes of
// n elements (encoded payload, or n * element size).
template <class BytesOf>
size_t twoShotWireBytes(const std::vector<Range>& shards, int me, BytesOf bytesOf) {
  const size_t p = shards.size();
  size_t wire = 0;
  for (size_t j = 0; j < p; ++j) {
    const size_t b = bytesOf(shards[j].count);
    wire += static_cast<int>(j) == me ? b * (p - 1) : b;
  }
  return wire;
}

// The same over the balanced shards of n elements (layout.h balancedShard), without building
// them.
template <class BytesOf>
size_t twoShotWireBytes(size_t n, int p, size_t align, int me, BytesOf bytesOf) {
  size_t wire = 0;
  for (int j = 0; j < p; ++j) {
    const size_t b = bytesOf(balancedShard(n, p, j, align).count);
    wire += j == me ? b * static_cast<size_t>(p - 1) : b;
  }
  return wire;
}

// ReduceScatter (every other owner gets its shard) and direct AllGather (every other rank gets
// this rank's shard): p-1 payloads of one shard each.
inline size_t directWireBytes(size_t shardBytes, int nranks) {
  return shardBytes * static_cast<size_t>(nranks - 1);
}

}  // namespace coccl
