// The grid-wide owner step's staged loop (src/kernels/cuda/reduce_staged.cuh: every input of a
// tile copied into this warp's ring of shared-memory slots a tile ahead, the tile bodies reading
// the slot) on emulated warps with host buffers as shared memory, against the host's
// decodeReduceEncode, bit for bit: whole tiles that wrap the ring, a partial last tile and a
// partial last block (the out-of-line direct tail), the rotated and linear bodies, with and
// without a raw input, the most inputs a slot holds with a raw input and one more (all direct),
// unaligned inputs and no stage (all direct), and no write outside the outputs.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "codec_ref.h"
#include "emu_warps.h"
#include "kernels/cuda/reduce_staged.cuh"

namespace coccl {
namespace test {
namespace {

constexpr int kWarps = 2;
constexpr size_t kRing = 16384;  // bytes a warp, >= every ReduceStage<S, Tag>::kBytes

struct Case {
  int p, self;
  bool unaligned;
  bool noStage = false;  // the launcher found no room for the slots: stage = null
};

template <class Tag>
void checkStagedReduce(const CodecDesc& d, const Codec& c, cocclDataType_t dt, size_t n, Case k,
                       float scale) {
  using T = typename Tag::T;
  // the largest slots: G = 32 (16 scale words a tile)
  using S32 = typename kdev::TileRun<32, sizeof(T), COCCL_REDUCE_TILE_ELEMS>::Shape;
  static_assert(kdev::ReduceStage<S32, Tag>::kBytes <= static_cast<int>(kRing), "test's ring");
  const size_t off = k.unaligned ? 4 : 0;  // payloads 4-byte aligned: vector code loads, no staging
  std::vector<std::vector<uint8_t>> ins(k.p);
  std::vector<std::vector<uint8_t>> bufs(k.p);
  std::vector<const uint8_t*> ptrs(k.p, nullptr);
  std::vector<uint8_t> selfIn;
  for (int r = 0; r < k.p; ++r) {
    const std::vector<float> x =
        r == 1 ? edgeInput(n, d.block, 5 + r) : randomInput(n, 11 + r, 1.0f + 0.5f * r);
    const std::vector<uint8_t> typed = toTyped(x, dt);
    if (r == k.self) selfIn = typed;
    ins[r] = hostEncode(c, typed, dt, n);
    bufs[r].assign(ins[r].size() + 32, 0);
    uint8_t* at = bufs[r].data() + (16 - reinterpret_cast<uintptr_t>(bufs[r].data()) % 16) % 16;
    std::memcpy(at + off, ins[r].data(), ins[r].size());
    if (r != k.self) ptrs[r] = at + off;
  }
  std::vector<uint8_t> wantOut, wantDec;
  hostReduce(c, ins, k.self, selfIn, dt, n, scale, &wantOut, &wantDec);
  std::vector<uint8_t> selfBuf(selfIn.size() + 32);
  uint8_t* selfAt = selfBuf.data() + (16 - reinterpret_cast<uintptr_t>(selfBuf.data()) % 16) % 16;
  if (!selfIn.empty()) std::memcpy(selfAt, selfIn.data(), selfIn.size());
  std::vector<uint8_t> outBuf(wantOut.size() + 64, 0xa5), decBuf(n * typeSize(dt) + 64, 0x5a);
  uint8_t* outAt = outBuf.data() + (16 - reinterpret_cast<uintptr_t>(outBuf.data()) % 16) % 16;
  uint8_t* decAt = decBuf.data() + (16 - reinterpret_cast<uintptr_t>(decBuf.data()) % 16) % 16;
  const std::vector<uint8_t> outWas(outBuf), decWas(decBuf);
  std::vector<uint4> ring(kWarps * kRing / sizeof(uint4));
  runWarps(kWarps, [&](kdev::WarpSet ws) {
    COCCL_DISPATCH_FAMILY(
        d, COCCL_DISPATCH_G(
               d, (kdev::reduceTilesStaged<kFam, kG, Tag>(
                      d, ptrs.data(), k.p, k.self,
                      k.self >= 0 ? reinterpret_cast<const T*>(selfAt) : nullptr, n, scale, outAt,
                      reinterpret_cast<T*>(decAt), ws.warp, ws.nwarps,
                      k.noStage ? nullptr
                                : reinterpret_cast<uint8_t*>(ring.data()) + ws.warp * kRing))));
  });
  const std::vector<uint8_t> gotOut(outAt, outAt + wantOut.size());
  const long i = firstDiff(gotOut, wantOut);
  ASSERT_LT(i, 0) << describeDiff(gotOut, wantOut, i, n, d.block);
  const std::vector<uint8_t> gotDec(decAt, decAt + wantDec.size());
  ASSERT_EQ(firstTypedDiff(gotDec, wantDec, dt, false), -1) << "decoded output";
  for (size_t b = 0; b < outBuf.size(); ++b) {
    if (outBuf.data() + b < outAt || outBuf.data() + b >= outAt + wantOut.size()) {
      ASSERT_EQ(outBuf[b], outWas[b]) << "wrote outside the payload at " << b;
    }
  }
  for (size_t b = 0; b < decBuf.size(); ++b) {
    if (decBuf.data() + b < decAt || decBuf.data() + b >= decAt + wantDec.size()) {
      ASSERT_EQ(decBuf[b], decWas[b]) << "wrote outside the decoded output at " << b;
    }
  }
}

TEST(EmulatedReduceStaged, OwnerStepMatchesTheHost) {
  const Case cases[] = {{2, 0, false},  {4, 3, false}, {4, -1, false}, {8, 0, false},
                        {8, -1, false}, {9, 0, false}, {3, 1, true},   {4, 1, false, true}};
  for (const std::string& base : variantSpecs()) {
    for (int g : {32, 128, 512}) {
      CodecPtr c = makeCodec(withBlock(base, g));
      const CodecDesc d = c->deviceDesc();
      for (cocclDataType_t dt : codecTypes()) {
        for (const Case& k : cases) {
          // 2 warps of 512-element tiles: 3 whole tiles a warp (the ring wraps), then a partial
          // tile; p = 2 also a whole number of tiles
          for (size_t n : {size_t{6 * 512 + 300}, size_t{4 * 512}}) {
            if (n == 4 * 512 && k.p != 2) continue;
            const float scale = k.p == 4 ? 1.0f / 4 : 1.0f;
            SCOPED_TRACE(c->spec() + " " + typeName(dt) + " n=" + std::to_string(n) +
                         " p=" + std::to_string(k.p) + " self=" + std::to_string(k.self) +
                         (k.unaligned ? " unaligned" : "") + (k.noStage ? " no stage" : ""));
            withTag(dt,
                    [&](auto tag) { checkStagedReduce<decltype(tag)>(d, *c, dt, n, k, scale); });
            if (::testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace test
}  // namespace coccl
