// The device codec functions of src/kernels/cuda/chunk_codec.cuh, compiled as host code and run
// with every warp emulated lane by lane (tests/gpu/emu), against the host codecs, bit for bit. Runs on
// any machine: it checks the tile layout, the order of every floating-point operation, the
// RAW/transform selection and the reductions of the device code path without a GPU (the
// conversion instructions, which this build replaces by their software reference, are checked
// on the GPU by test_convert_hw.cu). Sizes are small: every shuffle is a coroutine switch.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "codec_ref.h"
#include "emu_warps.h"
#include "kernels/cuda/chunk_codec.cuh"
#include "warp_reference.cuh"

namespace coccl {
namespace test {
namespace {

using kdev::WarpSet;

std::vector<uint8_t> emuEncode(const CodecDesc& d, const uint8_t* in, cocclDataType_t dt, size_t n,
                               size_t payloadOffset, bool legacy, int nwarps = 3) {
  std::vector<uint8_t> buf(codecPayloadBytes(d, n) + payloadOffset + 16, 0xa5);
  uint8_t* payload = buf.data() + payloadOffset;
  withTag(dt, [&](auto tag) {
    using Tag = decltype(tag);
    using T = typename Tag::T;
    runWarps(nwarps, [&](WarpSet ws) {
      if (legacy) {
        COCCL_DISPATCH_G(
            d, (kdev::encodeChunkG<kG, Tag>(d, reinterpret_cast<const T*>(in), n, payload, ws)));
      } else {
        kdev::encodeChunk<Tag>(d, reinterpret_cast<const T*>(in), n, payload, ws);
      }
    });
  });
  return std::vector<uint8_t>(payload, payload + codecPayloadBytes(d, n));
}

std::vector<uint8_t> emuDecode(const CodecDesc& d, const std::vector<uint8_t>& payload, size_t n,
                               cocclDataType_t dt, size_t payloadOffset, bool legacy) {
  std::vector<uint8_t> pbuf(payload.size() + payloadOffset);
  std::memcpy(pbuf.data() + payloadOffset, payload.data(), payload.size());
  std::vector<uint8_t> out(n * typeSize(dt) + 64, 0x5a);
  withTag(dt, [&](auto tag) {
    using Tag = decltype(tag);
    using T = typename Tag::T;
    runWarps(2, [&](WarpSet ws) {
      const uint8_t* p = pbuf.data() + payloadOffset;
      if (legacy) {
        COCCL_DISPATCH_G(
            d, (kdev::decodeChunkG<kG, Tag>(d, p, n, reinterpret_cast<T*>(out.data()), ws)));
      } else {
        kdev::decodeChunk<Tag>(d, p, n, reinterpret_cast<T*>(out.data()), ws);
      }
    });
  });
  for (size_t i = n * typeSize(dt); i < out.size(); ++i)
    EXPECT_EQ(out[i], 0x5a) << "write past the end at byte " << i;
  out.resize(n * typeSize(dt));
  return out;
}

// Energy, Hadamard transform and max |.| of one tile shape on emulated warps, against the
// host's scalar block math, bit for bit, on blocks spanning the fp32 range. (Codes alone would
// hardly see a wrong energy order: it moves alpha only when a is next to a power of two.)
template <int G, int E0>
void checkTileMath(uint32_t seed) {
  using S = typename kdev::TileShape<
      G, E0, (E0 * (COCCL_TILE_ELEMS / E0) <= G ? COCCL_TILE_ELEMS / E0 : G / E0)>;
  constexpr int kBlocks = 32 / S::kL * 2;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> ud(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(kBlocks) * G);
  for (size_t i = 0; i < x.size(); ++i) {
    const int e = static_cast<int>((i / G) % 5) * 20 - 40 + static_cast<int>(rng() % 9);
    x[i] = std::ldexp(ud(rng), e);
  }
  std::vector<float> energy(kBlocks), amax(kBlocks), y(x.size());
  runWarps(1, [&](WarpSet) {
    kdev::forEachTile<S::kL>(kBlocks, 0, 1, [&](size_t b, int lig, bool valid) {
      float v[S::kE1][S::kE0];
      for (int j = 0; j < S::kE1; ++j)
        for (int e = 0; e < S::kE0; ++e) v[j][e] = x[b * G + S::runStart(j, lig) + e];
      const float en = kdev::tileEnergy<S>(v);
      const float m = kdev::groupMaxAbs<S::kL>(kdev::tileMaxAbs<S>(v));
      kdev::tileFwht<S>(v, lig);
      if (!valid) return;
      if (lig == 0) {
        energy[b] = en;
        amax[b] = m;
      }
      for (int j = 0; j < S::kE1; ++j)
        for (int e = 0; e < S::kE0; ++e) y[b * G + S::runStart(j, lig) + e] = v[j][e];
    });
  });
  for (int b = 0; b < kBlocks; ++b) {
    const float* xb = &x[static_cast<size_t>(b) * G];
    const float want = kmath::blockEnergy<G>(xb);
    EXPECT_EQ(kmath::floatBits(energy[b]), kmath::floatBits(want))
        << "G=" << G << " E0=" << E0 << " block " << b;
    EXPECT_EQ(kmath::floatBits(amax[b]), kmath::maxAbsBits<G>(xb));
    std::vector<float> t(xb, xb + G);
    kmath::fwht<G>(t.data());
    for (int i = 0; i < G; ++i)
      ASSERT_EQ(kmath::floatBits(y[static_cast<size_t>(b) * G + i]), kmath::floatBits(t[i]))
          << "G=" << G << " E0=" << E0 << " block " << b << " element " << i;
  }
}

TEST(EmulatedDeviceCodec, TileMathMatchesTheHostBlockMath) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    checkTileMath<32, 4>(seed);
    checkTileMath<32, 8>(seed);
    checkTileMath<64, 4>(seed);
    checkTileMath<64, 8>(seed);
    checkTileMath<128, 4>(seed);
    checkTileMath<128, 8>(seed);
    checkTileMath<256, 4>(seed);
    checkTileMath<256, 8>(seed);
    checkTileMath<512, 4>(seed);
    checkTileMath<512, 8>(seed);
  }
}

const size_t kCounts[] = {1, 7, 31, 33, 127, 129, 2305};

TEST(EmulatedDeviceCodec, EncodeAndDecodeMatchTheHostBitForBit) {
  for (const std::string& base : variantSpecs()) {
    for (int g : blockSizes()) {
      CodecPtr c = makeCodec(withBlock(base, g));
      const CodecDesc d = c->deviceDesc();
      for (cocclDataType_t dt : codecTypes()) {
        for (size_t n : kCounts) {
          SCOPED_TRACE(c->spec() + " " + typeName(dt) + " n=" + std::to_string(n));
          const std::vector<uint8_t> in = toTyped(edgeInput(n, g, 1000 + n + g), dt);
          const std::vector<uint8_t> want = hostEncode(*c, in, dt, n);
          const std::vector<uint8_t> got = emuEncode(d, in.data(), dt, n, 0, false);
          const long i = firstDiff(got, want);
          ASSERT_LT(i, 0) << describeDiff(got, want, i, n, g);
          for (cocclDataType_t ot : codecTypes()) {
            const std::vector<uint8_t> dw = hostDecode(*c, want, n, ot);
            const std::vector<uint8_t> dg = emuDecode(d, want, n, ot, 0, false);
            const long k = firstTypedDiff(dg, dw, ot, false);
            ASSERT_LT(k, 0) << "decode to " << typeName(ot) << " differs at element " << k;
          }
        }
      }
    }
  }
}

TEST(EmulatedDeviceCodec, UnalignedBuffersTakeTheScalarPath) {
  for (const std::string& base : variantSpecs()) {
    CodecPtr c = makeCodec(withBlock(base, 128));
    const CodecDesc d = c->deviceDesc();
    for (cocclDataType_t dt : codecTypes()) {
      const size_t n = 1000;
      const std::vector<uint8_t> typed = toTyped(edgeInput(n, 128, 7), dt);
      std::vector<uint8_t> shifted(typed.size() + 16);
      std::memcpy(shifted.data() + typeSize(dt), typed.data(), typed.size());  // one element off
      const std::vector<uint8_t> want = hostEncode(*c, typed, dt, n);
      for (size_t off : {1, 2, 4}) {
        SCOPED_TRACE(c->spec() + " " + typeName(dt) + " offset " + std::to_string(off));
        EXPECT_EQ(firstDiff(emuEncode(d, shifted.data() + typeSize(dt), dt, n, off, false), want),
                  -1);
        EXPECT_EQ(firstTypedDiff(emuDecode(d, want, n, dt, off, false), hostDecode(*c, want, n, dt),
                                 dt, false),
                  -1);
      }
    }
  }
}

// int8 rotate=auto: edgeInput holds blocks of both forms (the payload's transform-mode words
// carry both flags), in one warp too; device bytes and decode equal the host's.
TEST(EmulatedDeviceCodec, Int8AutoMixesBothFormsBitForBit) {
  for (int g : blockSizes()) {
    CodecPtr c = makeCodec(withBlock("int8:rotate=auto", g));
    const CodecDesc d = c->deviceDesc();
    const size_t n = 48 * static_cast<size_t>(g) + 5;
    for (cocclDataType_t dt : codecTypes()) {
      SCOPED_TRACE(c->spec() + " " + typeName(dt));
      const std::vector<uint8_t> in = toTyped(edgeInput(n, g, 31 + g), dt);
      const std::vector<uint8_t> want = hostEncode(*c, in, dt, n);
      const size_t nb = (n + g - 1) / g;
      int rotated = 0, plain = 0;
      for (size_t b = 0; b < nb; ++b) {
        uint32_t w = 0;
        std::memcpy(&w, want.data() + nb * g + 4 * b, 4);
        if (w & 0x80000000u) continue;  // RAW
        (w & 1u) ? ++plain : ++rotated;
      }
      EXPECT_GT(rotated, 0);
      EXPECT_GT(plain, 0);
      const std::vector<uint8_t> got = emuEncode(d, in.data(), dt, n, 0, false);
      const long i = firstDiff(got, want);
      ASSERT_LT(i, 0) << describeDiff(got, want, i, n, g);
      EXPECT_EQ(firstTypedDiff(emuDecode(d, want, n, dt, 0, false), hostDecode(*c, want, n, dt),
                               dt, false),
                -1);
    }
  }
}

TEST(EmulatedDeviceCodec, LegacyBlockOpsPathMatchesTheHost) {
  for (const std::string& base : variantSpecs()) {
    if (base == "int8:rotate=auto") continue;  // the legacy reference has rotate=0|1 only
    for (int g : blockSizes()) {
      CodecPtr c = makeCodec(withBlock(base, g));
      const CodecDesc d = c->deviceDesc();
      for (cocclDataType_t dt : codecTypes()) {
        for (size_t n : {size_t{33}, size_t{2305}}) {
          SCOPED_TRACE(c->spec() + " " + typeName(dt) + " n=" + std::to_string(n));
          const std::vector<uint8_t> in = toTyped(edgeInput(n, g, 77 + n), dt);
          const std::vector<uint8_t> want = hostEncode(*c, in, dt, n);
          const std::vector<uint8_t> got = emuEncode(d, in.data(), dt, n, 0, true);
          const long i = firstDiff(got, want);
          ASSERT_LT(i, 0) << describeDiff(got, want, i, n, g);
          EXPECT_EQ(firstTypedDiff(emuDecode(d, want, n, dt, 0, true), hostDecode(*c, want, n, dt),
                                   dt, false),
                    -1);
        }
      }
    }
  }
}

// Inputs aimed at the encode's reordered transform (tile_math.cuh's rotateTile: H(x) first,
// alpha folded into the quantization multiplier, host order when alpha < 1): blocks spanning
// random exponent ranges down to the fp32 subnormals (transform sums in the subnormal range),
// blocks whose RMS sits near Qmax / 2^k (alpha at and around 1, mixed in a warp), zeros, and
// blocks of RMS above Qmax with tiny elements (alpha < 1: alpha * x rounds, the host order).
std::vector<float> rotationInput(size_t n, int g, uint32_t seed, float qmax) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> ud(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (size_t base = 0; base < n; base += static_cast<size_t>(g)) {
    const size_t end = std::min(n, base + static_cast<size_t>(g));
    const int kind = static_cast<int>(rng() % 5);
    const int hi = -149 + static_cast<int>(rng() % 170), lo = hi - static_cast<int>(rng() % 40);
    const float near = qmax * std::ldexp(1.0f, -static_cast<int>(rng() % 3)) *
                       (0.5f + static_cast<float>(rng() % 1024) / 1024.0f);
    for (size_t i = base; i < end; ++i) {
      if (kind == 0) {
        v[i] = std::ldexp(ud(rng), lo + static_cast<int>(rng() % static_cast<unsigned>(hi - lo + 1)));
      } else if (kind == 1) {
        v[i] = near * ud(rng) * 1.7f;
      } else if (kind == 2) {
        v[i] = (rng() % 3 == 0) ? 0.0f : std::ldexp(ud(rng), -140 + static_cast<int>(rng() % 12));
      } else if (kind == 3) {
        v[i] = ud(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 20) - 10);
      } else {  // RMS above Qmax (alpha < 1) with tiny elements that alpha * x rounds
        v[i] = (rng() % 4 == 0) ? std::ldexp(ud(rng), -128 - static_cast<int>(rng() % 8))
                                : near * 8.0f * ud(rng);
      }
    }
  }
  return v;
}

TEST(EmulatedDeviceCodec, ReorderedTransformMatchesTheHostOnEdgeScales) {
  for (const std::string& base : variantSpecs()) {
    for (int g : blockSizes()) {
      CodecPtr c = makeCodec(withBlock(base, g));
      const CodecDesc d = c->deviceDesc();
      const float qmax = d.kind == CodecKind::Int8 ? 127.0f : (d.fp8E5M2 ? 57344.0f : 448.0f);
      for (cocclDataType_t dt : codecTypes()) {
        for (uint32_t seed = 1; seed <= 2; ++seed) {
          const size_t n = 4096;
          SCOPED_TRACE(c->spec() + " " + typeName(dt) + " seed " + std::to_string(seed));
          const std::vector<uint8_t> in = toTyped(rotationInput(n, g, seed * 77 + g, qmax), dt);
          const std::vector<uint8_t> want = hostEncode(*c, in, dt, n);
          const std::vector<uint8_t> got = emuEncode(d, in.data(), dt, n, 0, false);
          const long i = firstDiff(got, want);
          ASSERT_LT(i, 0) << describeDiff(got, want, i, n, g);
          const long k =
              firstTypedDiff(emuDecode(d, want, n, dt, 0, false), hostDecode(*c, want, n, dt), dt,
                             false);
          ASSERT_LT(k, 0) << "decode differs at element " << k;
        }
      }
    }
  }
}

// The grid-wide kernels' staged loops (tile_loops.cuh: shared-memory ring filled kStages - 1
// tiles ahead, running pointers, the out-of-line tail), with host buffers as shared memory:
// whole tiles, a partial last tile, a partial last block, and unaligned buffers (all direct).
template <class Tag>
void checkStaged(const CodecDesc& d, const Codec& c, cocclDataType_t dt, size_t n, size_t inOff,
                 size_t payloadOff) {
  using T = typename Tag::T;
  const std::vector<uint8_t> typed = toTyped(edgeInput(n, d.block, 4242 + n), dt);
  const std::vector<uint8_t> want = hostEncode(c, typed, dt, n);
  std::vector<uint8_t> inBuf(typed.size() + 32), payBuf(want.size() + 64, 0xa5);
  uint8_t* inP = inBuf.data() + (16 - reinterpret_cast<uintptr_t>(inBuf.data()) % 16) % 16 + inOff;
  uint8_t* payP =
      payBuf.data() + (16 - reinterpret_cast<uintptr_t>(payBuf.data()) % 16) % 16 + payloadOff;
  std::memcpy(inP, typed.data(), typed.size());
  constexpr int kWarps = 3;
  std::vector<uint4> ring(kWarps * 16384 / sizeof(uint4));
  runWarps(kWarps, [&](WarpSet ws) {
    COCCL_DISPATCH_FAMILY(
        d, COCCL_DISPATCH_G(d, (kdev::encodeTilesStaged<kFam, kG, Tag>(
                                   d, reinterpret_cast<const T*>(inP), n, payP, ws.warp, ws.nwarps,
                                   reinterpret_cast<uint8_t*>(ring.data()) + ws.warp * 16384))));
  });
  const std::vector<uint8_t> got(payP, payP + want.size());
  const long i = firstDiff(got, want);
  ASSERT_LT(i, 0) << "staged encode: " << describeDiff(got, want, i, n, d.block);
  std::memcpy(payP, want.data(), want.size());
  std::vector<uint8_t> outBuf(typed.size() + 64, 0x5a);
  uint8_t* outP = outBuf.data() + (16 - reinterpret_cast<uintptr_t>(outBuf.data()) % 16) % 16 + inOff;
  const std::vector<uint8_t> outWas(outBuf);
  runWarps(kWarps, [&](WarpSet ws) {
    COCCL_DISPATCH_FAMILY(
        d, COCCL_DISPATCH_G(d, (kdev::decodeTilesStaged<kFam, kG, Tag>(
                                   d, payP, n, reinterpret_cast<T*>(outP), ws.warp, ws.nwarps,
                                   reinterpret_cast<uint8_t*>(ring.data()) + ws.warp * 16384))));
  });
  const std::vector<uint8_t> dg(outP, outP + typed.size());
  ASSERT_EQ(firstTypedDiff(dg, hostDecode(c, want, n, dt), dt, false), -1) << "staged decode";
  for (size_t k = 0; k < outBuf.size(); ++k) {
    if (outBuf.data() + k < outP || outBuf.data() + k >= outP + typed.size()) {
      ASSERT_EQ(outBuf[k], outWas[k]) << "staged decode wrote outside the output at " << k;
    }
  }
}

TEST(EmulatedDeviceCodec, StagedKernelLoopsMatchTheHost) {
  static_assert(kdev::EncodeStage<kdev::TileShapeFor<kdev::Int8Family, 512, kdev::Fp32Tag>,
                                  kdev::Fp32Tag>::kBytes <= 16384,
                "ring size of the test");
  for (const std::string& base : variantSpecs()) {
    for (int g : blockSizes()) {
      CodecPtr c = makeCodec(withBlock(base, g));
      const CodecDesc d = c->deviceDesc();
      for (cocclDataType_t dt : codecTypes()) {
        // 7 whole tiles (1024 elements) and a tail; a whole number of tiles; one partial tile
        for (size_t n : {size_t{7 * 1024 + 300}, size_t{8 * 1024}, size_t{1000}}) {
          for (int misalign = 0; misalign < 2; ++misalign) {
            if (misalign && n != 8 * 1024) continue;
            SCOPED_TRACE(c->spec() + " " + typeName(dt) + " n=" + std::to_string(n) +
                         (misalign ? " unaligned" : ""));
            withTag(dt, [&](auto tag) {
              checkStaged<decltype(tag)>(d, *c, dt, n, misalign ? typeSize(dt) : 0,
                                         misalign ? 4 : 0);
            });
            if (::testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

// reduceChunk on emulated warps: acc = sum (self raw / decoded payloads), scale, encode, decode.
void emuReduce(const CodecDesc& d, const std::vector<std::vector<uint8_t>>& ins, int self,
               const std::vector<uint8_t>& selfIn, cocclDataType_t dt, size_t n, float scale,
               std::vector<uint8_t>* out, std::vector<uint8_t>* decoded) {
  const int p = static_cast<int>(ins.size());
  std::vector<const uint8_t*> ptrs(p);
  for (int r = 0; r < p; ++r) ptrs[r] = r == self ? nullptr : ins[r].data();
  out->assign(codecPayloadBytes(d, n), 0);
  decoded->assign(n * typeSize(dt), 0);
  withTag(dt, [&](auto tag) {
    using Tag = decltype(tag);
    using T = typename Tag::T;
    runWarps(2, [&](WarpSet ws) {
      kdev::reduceChunk<Tag>(d, ptrs.data(), p, self,
                             self >= 0 ? reinterpret_cast<const T*>(selfIn.data()) : nullptr, n,
                             scale, out->data(), reinterpret_cast<T*>(decoded->data()), ws);
    });
  });
}

TEST(EmulatedDeviceCodec, DecodeReduceEncodeMatchesTheHost) {
  for (const std::string& base : variantSpecs()) {
    for (int g : {32, 128, 512}) {
      CodecPtr c = makeCodec(withBlock(base, g));
      const CodecDesc d = c->deviceDesc();
      for (cocclDataType_t dt : codecTypes()) {
        for (int p : {1, 2, 3, 5}) {
          for (int self : {-1, 0, p - 1}) {
            for (float scale : {1.0f, 1.0f / static_cast<float>(p)}) {
              if (self == -1 && p == 1 && scale != 1.0f) continue;
              const size_t n = 1500 + 37 * p;
              SCOPED_TRACE(c->spec() + " " + typeName(dt) + " p=" + std::to_string(p) +
                           " self=" + std::to_string(self) + " scale=" + std::to_string(scale));
              std::vector<std::vector<uint8_t>> ins(p);
              std::vector<uint8_t> selfIn;
              for (int r = 0; r < p; ++r) {
                const std::vector<float> x =
                    r == 1 ? edgeInput(n, g, 5 + r) : randomInput(n, 11 + r, 1.0f + r);
                const std::vector<uint8_t> typed = toTyped(x, dt);
                if (r == self) selfIn = typed;
                ins[r] = hostEncode(*c, typed, dt, n);
              }
              std::vector<uint8_t> wantOut, wantDec, gotOut, gotDec;
              hostReduce(*c, ins, self, selfIn, dt, n, scale, &wantOut, &wantDec);
              emuReduce(d, ins, self, selfIn, dt, n, scale, &gotOut, &gotDec);
              const long i = firstDiff(gotOut, wantOut);
              ASSERT_LT(i, 0) << describeDiff(gotOut, wantOut, i, n, g);
              ASSERT_EQ(firstTypedDiff(gotDec, wantDec, dt, false), -1);
            }
          }
        }
      }
    }
  }
}

TEST(EmulatedDeviceCodec, DecodeAccumulateMatchesTheHost) {
  for (const std::string& base : variantSpecs()) {
    for (int g : {64, 256}) {
      CodecPtr c = makeCodec(withBlock(base, g));
      const CodecDesc d = c->deviceDesc();
      for (int p : {1, 2, 4}) {
        const size_t n = 2049;
        SCOPED_TRACE(c->spec() + " p=" + std::to_string(p));
        std::vector<std::vector<uint8_t>> payloads(p);
        for (int r = 0; r < p; ++r)
          payloads[r] =
              hostEncode(*c, toTyped(edgeInput(n, g, 300 + r), cocclBfloat16), cocclBfloat16, n);
        std::vector<float> acc = randomInput(n, 9, 3.0f);
        std::vector<float> want = acc;
        for (int r = 0; r < p; ++r)
          c->decodeAccumulate(payloads[r].data(), n, cocclBfloat16, want.data());
        std::vector<const uint8_t*> ptrs(p + 1, nullptr);
        for (int r = 0; r < p; ++r) ptrs[r + 1] = payloads[r].data();
        std::vector<uint8_t> wb(n * 4);
        std::memcpy(wb.data(), want.data(), n * 4);
        // reduceChunk (with the encode compiled in) and the accumulate kernel's instantiation
        for (int variant = 0; variant < 2; ++variant) {
          std::vector<float> a = acc;
          runWarps(3, [&](WarpSet ws) {
            if (variant == 0) {
              kdev::reduceChunk<kdev::Fp32Tag>(d, ptrs.data(), p + 1, 0, a.data(), n, 1.0f, nullptr,
                                               a.data(), ws);
            } else {
              COCCL_DISPATCH_FAMILY(
                  d, COCCL_DISPATCH_G(d, (kdev::reduceChunkT<kFam, kG, kdev::Fp32Tag,
                                                             COCCL_ACCUMULATE_TILE_ELEMS, false>(
                                             d, ptrs.data(), p + 1, 0, a.data(), n, 1.0f, nullptr,
                                             a.data(), ws))));
            }
          });
          std::vector<uint8_t> gb(n * 4);
          std::memcpy(gb.data(), a.data(), n * 4);
          EXPECT_EQ(firstTypedDiff(gb, wb, cocclFloat32, true), -1) << "variant " << variant;
        }
      }
    }
  }
}

}  // namespace
}  // namespace test
}  // namespace coccl
