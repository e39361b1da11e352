// Shards and wire-byte formulas (src/collectives/layout.h, stats.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "collectives/layout.h"
#include "collectives/stats.h"

namespace coccl {
namespace {

TEST(Layout, BalancedShardsCoverTheMessageInWholeUnits) {
  for (size_t n : {0ul, 1ul, 127ul, 128ul, 129ul, 1000ul, 4096ul, 100003ul})
    for (int p : {1, 2, 3, 4, 7, 8, 16})
      for (size_t align : {1ul, 8ul, 128ul}) {
        const std::vector<Range> all = balancedShards(n, p, align);
        ASSERT_EQ(all.size(), static_cast<size_t>(p));
        size_t next = 0, lo = n, hi = 0;
        for (int r = 0; r < p; ++r) {
          const Range one = balancedShard(n, p, r, align);
          EXPECT_EQ(one.begin, all[r].begin);
          EXPECT_EQ(one.count, all[r].count);
          EXPECT_EQ(one.begin, next) << "contiguous";
          if (one.begin + one.count < n) {
            EXPECT_EQ((one.begin + one.count) % align, 0u);
          }
          next = one.begin + one.count;
          lo = std::min(lo, one.count);
          hi = std::max(hi, one.count);
        }
        EXPECT_EQ(next, n) << "n " << n << " p " << p;
        if (n % align == 0) {
          EXPECT_LE(hi - lo, align) << "shards differ by at most one unit";
        }
      }
}

TEST(Layout, TwoShotWireBytesWithoutShardsMatchesTheShardList) {
  auto bytes = [](size_t c) { return 3 * c + 16; };  // any per-shard formula
  for (size_t n : {1ul, 129ul, 100003ul})
    for (int p : {1, 2, 3, 8})
      for (int me = 0; me < p; ++me)
        EXPECT_EQ(twoShotWireBytes(n, p, 128, me, bytes),
                  twoShotWireBytes(balancedShards(n, p, 128), me, bytes));
}

// The two-shot pipeline's chunk: at most COCCL_CHUNK_BYTES, at least 8 chunks in the longest
// shard while chunks stay >= 64 KiB of input (or COCCL_CHUNK_BYTES when smaller), whole units.
TEST(Layout, PipelineChunksSplitShortShardsDownTo64KiB) {
  const size_t M = 1 << 20;
  // bf16, int4 blocks of 128: a 4 MiB AllReduce on 4 ranks has 1 MiB shards -> 8 chunks of 128 KiB
  EXPECT_EQ(pipelineChunkElems(M, 2, 128, (1u << 20) / 2), (128u << 10) / 2);
  // long shards keep COCCL_CHUNK_BYTES
  EXPECT_EQ(pipelineChunkElems(M, 2, 128, 64u << 20), M / 2);
  // short shards stop at 64 KiB of input
  EXPECT_EQ(pipelineChunkElems(M, 4, 1, 1000), (64u << 10) / 4);
  // a COCCL_CHUNK_BYTES below 64 KiB is kept as it is
  EXPECT_EQ(pipelineChunkElems(16u << 10, 4, 1, 1u << 20), (16u << 10) / 4);
  for (size_t es : {1ul, 2ul, 4ul})
    for (size_t align : {1ul, 32ul, 128ul, 2048ul})
      for (size_t longest : {1ul, 1000ul, 65536ul, 262145ul, 5000000ul})
        for (size_t cb : {4096ul, 65536ul, M, 8 * M}) {
          const size_t c = pipelineChunkElems(cb, es, align, longest);
          EXPECT_EQ(c % align, 0u);
          EXPECT_LE(c, std::max(chunkElems(cb, es, align), align));
          EXPECT_GE(c, chunkElems(std::min<size_t>(cb, 64 << 10), es, align));
          // never fewer chunks than COCCL_CHUNK_BYTES alone gives; 8 where whole units allow
          EXPECT_GE(numChunks(longest, c), numChunks(longest, chunkElems(cb, es, align)));
          if (align == 1 && c > chunkElems(std::min<size_t>(cb, 64 << 10), es, align) &&
              c < chunkElems(cb, es, align)) {
            EXPECT_EQ(numChunks(longest, c), 8u) << es << " " << longest << " " << cb;
          }
        }
}

}  // namespace
}  // namespace coccl
