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

}  // namespace
}  // namespace coccl
