// Partition of a message into per-rank shards and per-shard chunks.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace coccl {

struct Range {
  size_t begin = 0;
  size_t count = 0;
};

// Shard r of n elements split into p contiguous shards whose boundaries are multiples of
// `align` (a codec block); shards differ by at most one align unit; trailing shards may be
// empty. (No allocation: the device path computes it per call.) The arguments in the order of
// the kernels' dev::balancedShard (collectives/cuda_ipc/kernel_common.cuh), which computes the
// same shard.
inline Range balancedShard(size_t n, int p, int r, size_t align) {
  const size_t units = (n + align - 1) / align;
  const size_t b = std::min(units * static_cast<size_t>(r) / static_cast<size_t>(p) * align, n);
  const size_t e =
      std::min(units * static_cast<size_t>(r + 1) / static_cast<size_t>(p) * align, n);
  return {b, e - b};
}

// All p shards of balancedShard.
inline std::vector<Range> balancedShards(size_t n, int p, size_t align) {
  std::vector<Range> s(p);
  for (int r = 0; r < p; ++r) s[r] = balancedShard(n, p, r, align);
  return s;
}

// Shards of equal size `count` at r*count (ReduceScatter / AllGather layouts).
inline std::vector<Range> equalShards(size_t count, int p) {
  std::vector<Range> s(p);
  for (int r = 0; r < p; ++r) s[r] = {count * r, count};
  return s;
}

// Elements per pipeline chunk: chunkBytes of input, rounded down to a multiple of `align`
// (at least one align unit).
inline size_t chunkElems(size_t chunkBytes, size_t elemSize, size_t align) {
  size_t e = chunkBytes / elemSize;
  e = e / align * align;
  return e < align ? align : e;
}

// chunkElems for a message of `count` elements: no larger than the message rounded up to
// `align` (the same chunks; a call's buffers are sized by its chunk, so a COCCL_CHUNK_BYTES of
// a terabyte must not allocate one for a 4 KiB message).
inline size_t chunkElemsFor(size_t chunkBytes, size_t elemSize, size_t align, size_t count) {
  const size_t units = count / align + (count % align != 0);  // the message, rounded up
  return std::min(chunkElems(chunkBytes, elemSize, align), std::max<size_t>(units, 1) * align);
}

// Elements per chunk of a pipeline over shards of at most `longest` elements: chunkElems, made
// smaller where that leaves the longest shard fewer than kPipelineChunks chunks, but not below
// kPipelineMinChunkBytes of input (or chunkBytes, if that is smaller), in whole `align` units
// (so a codec with large blocks may get fewer chunks). A shard of one chunk has
// nothing to overlap: its encode, its transfer and its decode run one after the other, and a
// few chunks leave the pipeline's fill and drain long (host two-shot, 4 ranks, bf16 int4 over a
// 1 Gbit/s link: AllReduce 3.2x at 4 MiB with 1 MiB chunks, 3.7x with 256 KiB; ReduceScatter
// 3.3x at 16 MiB with 1 MiB chunks, 3.6x with 512 KiB; perf/RESULTS.md). Every rank computes
// the same value from the same call.
constexpr size_t kPipelineChunks = 8;
constexpr size_t kPipelineMinChunkBytes = 64 << 10;
inline size_t pipelineChunkElems(size_t chunkBytes, size_t elemSize, size_t align, size_t longest) {
  const size_t most = chunkElems(chunkBytes, elemSize, align);
  const size_t least = chunkElems(std::min(chunkBytes, kPipelineMinChunkBytes), elemSize, align);
  const size_t part = (longest + kPipelineChunks - 1) / kPipelineChunks;
  const size_t want = (part + align - 1) / align * align;
  return std::max(least, std::min(most, want));
}

inline size_t numChunks(size_t count, size_t chunk) { return (count + chunk - 1) / chunk; }

// Chunk k of a shard (clipped).
inline Range chunkOf(const Range& shard, size_t chunk, size_t k) {
  size_t b = k * chunk;
  if (b >= shard.count) return {shard.begin + shard.count, 0};
  return {shard.begin + b, std::min(chunk, shard.count - b)};
}

}  // namespace coccl
