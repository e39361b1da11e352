// The conversion instructions the kernels use (src/kernels/cuda/convert.cuh) against the
// software reference (src/kernels/fp8.h, float_convert.h) over every input that can reach them
// (all 2^32 fp32 bit patterns, all 2^16 fp16 / FP8 pairs), and the tile math of
// tile_codec.cuh (energy, Hadamard, max) against the host's scalar block math on the GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <random>

#include "gpu_test_util.h"
#include "kernels/cuda/convert.cuh"
#include "kernels/cuda/tile_codec.cuh"
#include "kernels/hadamard.h"

namespace coccl {
namespace test {
namespace {

struct Mismatch {
  unsigned long long count;
  unsigned long long first;  // smallest input that differs
};

__device__ void record(Mismatch* m, unsigned long long input) {
  atomicAdd(&m->count, 1ull);
  atomicMin(&m->first, input);
}

// kind 0: fp32 -> E4M3 (non-NaN), 1: fp32 -> E5M2 (non-NaN), 2: fp32 -> bf16, 3: fp32 -> fp16
__global__ void allFloatsKernel(int kind, Mismatch* m) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i =
           static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < (1ull << 32); i += stride) {
    const uint32_t u = static_cast<uint32_t>(i);
    const float x = __uint_as_float(u);
    const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    bool bad = false;
    if (kind == 0 || kind == 1) {
      if (nan) continue;
      uint32_t want, two, four;
      if (kind == 0) {
        want = kmath::floatToFp8SatNonNan<kmath::Fp8E4M3>(x);
        two = kdev::f32x2ToFp8x2<kmath::Fp8E4M3>(x, -x);
        four = kdev::f32x4ToFp8x4<kmath::Fp8E4M3>(0.0f, x, -x, x);
      } else {
        want = kmath::floatToFp8SatNonNan<kmath::Fp8E5M2>(x);
        two = kdev::f32x2ToFp8x2<kmath::Fp8E5M2>(x, -x);
        four = kdev::f32x4ToFp8x4<kmath::Fp8E5M2>(0.0f, x, -x, x);
      }
      const uint32_t wantNeg = want ^ 0x80u;  // RNE and saturation are sign-symmetric
      bad = (two & 0xffu) != want || (two >> 8) != wantNeg || ((four >> 8) & 0xffu) != want ||
            ((four >> 16) & 0xffu) != wantNeg || (four >> 24) != want || (four & 0xffu) != 0u;
    } else if (kind == 2) {
      const uint32_t r = kdev::f32x2ToBf16x2(x, 1.0f);
      bad = (r & 0xffffu) != kmath::floatToBf16(x) || (r >> 16) != 0x3f80u;
    } else {
      const uint32_t r = kdev::f32x2ToFp16x2(1.0f, x);
      bad = (r >> 16) != kmath::floatToFp16(x) || (r & 0xffffu) != 0x3c00u;
    }
    if (bad) record(m, i);
  }
}

// kind 0: fp16 -> fp32 (NaN: any NaN); 1: E4M3 pairs -> fp32; 2: E5M2 pairs (NaN codes: NaN)
__global__ void all16Kernel(int kind, Mismatch* m) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= 65536u) return;
  auto same = [](float a, float b) {
    return __float_as_uint(a) == __float_as_uint(b) || (a != a && b != b);
  };
  bool bad;
  if (kind == 0) {
    bad = !same(kdev::fp16BitsToF32(static_cast<uint16_t>(i)),
                kmath::fp16ToFloat(static_cast<uint16_t>(i)));
  } else {
    float lo, hi, wlo, whi;
    if (kind == 1) {
      kdev::fp8x2ToF32<kmath::Fp8E4M3>(i, lo, hi);
      wlo = kmath::fp8ToFloat<kmath::Fp8E4M3>(static_cast<uint8_t>(i));
      whi = kmath::fp8ToFloat<kmath::Fp8E4M3>(static_cast<uint8_t>(i >> 8));
    } else {
      kdev::fp8x2ToF32<kmath::Fp8E5M2>(i, lo, hi);
      wlo = kmath::fp8ToFloat<kmath::Fp8E5M2>(static_cast<uint8_t>(i));
      whi = kmath::fp8ToFloat<kmath::Fp8E5M2>(static_cast<uint8_t>(i >> 8));
    }
    bad = !same(lo, wlo) || !same(hi, whi);
    // four codes a word (the high pair from the register's upper half)
    const uint32_t w = i | ((i ^ 0xa5c3u) << 16);
    float o[4];
    if (kind == 1)
      kdev::fp8x4ToF32<kmath::Fp8E4M3>(w, o[0], o[1], o[2], o[3]);
    else
      kdev::fp8x4ToF32<kmath::Fp8E5M2>(w, o[0], o[1], o[2], o[3]);
    for (int b = 0; b < 4; ++b) {
      const uint8_t code = static_cast<uint8_t>(w >> (8 * b));
      const float want = kind == 1 ? kmath::fp8ToFloat<kmath::Fp8E4M3>(code)
                                   : kmath::fp8ToFloat<kmath::Fp8E5M2>(code);
      bad = bad || !same(o[b], want);
    }
  }
  if (bad) record(m, i);
}

// int8 codes as biased floats (convert.cuh's int8BiasedAt): every byte at every position.
__global__ void int8BiasKernel(Mismatch* m) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= 65536u) return;
  const uint32_t w = i | ((i ^ 0x3c96u) << 16);
  const uint32_t xw = w ^ kdev::kInt8Flip;
  const float got[4] = {kdev::int8BiasedAt<0>(xw), kdev::int8BiasedAt<1>(xw),
                        kdev::int8BiasedAt<2>(xw), kdev::int8BiasedAt<3>(xw)};
  bool bad = false;
  for (int b = 0; b < 4; ++b) {
    const float want = static_cast<float>(static_cast<int8_t>(w >> (8 * b))) + kdev::kInt8Bias;
    bad = bad || __float_as_uint(got[b]) != __float_as_uint(want);
  }
  if (bad) record(m, i);
}

Mismatch run(void (*launch)(Mismatch*)) {
  Mismatch* d = nullptr;
  cudaCheck(cudaMalloc(&d, sizeof(Mismatch)), "cudaMalloc");
  const Mismatch init{0, ~0ull};
  cudaCheck(cudaMemcpy(d, &init, sizeof(init), cudaMemcpyHostToDevice), "cudaMemcpy");
  launch(d);
  cudaCheck(cudaGetLastError(), "launch");
  Mismatch h;
  cudaCheck(cudaMemcpy(&h, d, sizeof(h), cudaMemcpyDeviceToHost), "cudaMemcpy");
  cudaCheck(cudaFree(d), "cudaFree");
  return h;
}

TEST(GpuConvert, ConversionInstructionsEqualTheSoftwareReferenceOnEveryInput) {
  COCCL_REQUIRE_GPU();
  std::printf("[codec gpu] conversion instructions: fp8 %s, bf16/fp16 %s (this build)\n",
              COCCL_KERNELS_SOFT_CVT ? "software" : "hardware on sm_89+",
              COCCL_KERNELS_SOFT_CVT ? "software" : "hardware on sm_80+");
  const char* names[] = {"fp32->E4M3", "fp32->E5M2", "fp32->bf16", "fp32->fp16"};
  for (int kind = 0; kind < 4; ++kind) {
    static int k;
    k = kind;
    const Mismatch m = run([](Mismatch* d) { allFloatsKernel<<<132 * 16, 256>>>(k, d); });
    EXPECT_EQ(m.count, 0u) << names[kind] << ": " << m.count << " inputs differ, first 0x"
                           << std::hex << m.first;
  }
  const char* names16[] = {"fp16->fp32", "E4M3x2/x4->fp32", "E5M2x2/x4->fp32"};
  for (int kind = 0; kind < 3; ++kind) {
    static int k;
    k = kind;
    const Mismatch m = run([](Mismatch* d) { all16Kernel<<<256, 256>>>(k, d); });
    EXPECT_EQ(m.count, 0u) << names16[kind] << ": " << m.count << " inputs differ, first 0x"
                           << std::hex << m.first;
  }
  const Mismatch mi = run([](Mismatch* d) { int8BiasKernel<<<256, 256>>>(d); });
  EXPECT_EQ(mi.count, 0u) << "int8 biased floats: " << mi.count << " words differ, first 0x"
                          << std::hex << mi.first;
}

// ---- tile math on the GPU ---------------------------------------------------------------------

template <class S>
__global__ void tileMathKernel(const float* x, int blocks, float* energy, uint32_t* amax,
                               float* y) {
  constexpr int G = S::kG;
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
  const int nwarps = static_cast<int>((gridDim.x * blockDim.x) >> 5);
  kdev::forEachTile<S::kL>(blocks, warp, nwarps, [&](size_t b, int lig, bool valid) {
    float v[S::kE1][S::kE0];
    for (int j = 0; j < S::kE1; ++j)
      for (int e = 0; e < S::kE0; ++e) v[j][e] = x[b * G + S::runStart(j, lig) + e];
    const float en = kdev::tileEnergy<S>(v);
    const float m = kdev::groupMaxAbs<S::kL>(kdev::tileMaxAbs<S>(v));
    kdev::tileFwht<S>(v, lig);
    if (!valid) return;
    if (lig == 0) {
      energy[b] = en;
      amax[b] = __float_as_uint(m);
    }
    for (int j = 0; j < S::kE1; ++j)
      for (int e = 0; e < S::kE0; ++e) y[b * G + S::runStart(j, lig) + e] = v[j][e];
  });
}

template <int G, int TBytes>
void checkTileMathOnGpu() {
  using S = typename kdev::TileRun<G, TBytes>::Shape;
  const int blocks = 4099;
  std::mt19937 rng(G + TBytes);
  std::uniform_real_distribution<float> ud(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(blocks) * G);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] =
        std::ldexp(ud(rng), static_cast<int>((i / G) % 9) * 10 - 45 + static_cast<int>(rng() % 7));
  std::vector<uint8_t> xb(x.size() * 4);
  std::memcpy(xb.data(), x.data(), xb.size());
  DevBuf dx = DevBuf::from(xb), de(blocks * 4), dm(blocks * 4), dy(xb.size());
  tileMathKernel<S><<<64, 256>>>(
      reinterpret_cast<const float*>(dx.data()), blocks, reinterpret_cast<float*>(de.data()),
      reinterpret_cast<uint32_t*>(dm.data()), reinterpret_cast<float*>(dy.data()));
  cudaCheck(cudaGetLastError(), "tileMathKernel");
  const std::vector<uint8_t> e = de.download(), m = dm.download(), y = dy.download();
  for (int b = 0; b < blocks; ++b) {
    const float* xp = &x[static_cast<size_t>(b) * G];
    uint32_t got;
    std::memcpy(&got, &e[4 * b], 4);
    ASSERT_EQ(got, kmath::floatBits(kmath::blockEnergy<G>(xp)))
        << "energy G=" << G << " block " << b;
    std::memcpy(&got, &m[4 * b], 4);
    ASSERT_EQ(got, kmath::maxAbsBits<G>(xp)) << "max G=" << G << " block " << b;
    std::vector<float> t(xp, xp + G);
    kmath::fwht<G>(t.data());
    ASSERT_EQ(std::memcmp(t.data(), &y[static_cast<size_t>(b) * G * 4], G * 4), 0)
        << "Hadamard G=" << G << " block " << b;
  }
}

TEST(GpuConvert, TileMathEqualsTheHostBlockMath) {
  COCCL_REQUIRE_GPU();
  checkTileMathOnGpu<32, 4>();
  checkTileMathOnGpu<32, 2>();
  checkTileMathOnGpu<64, 4>();
  checkTileMathOnGpu<64, 2>();
  checkTileMathOnGpu<128, 4>();
  checkTileMathOnGpu<128, 2>();
  checkTileMathOnGpu<256, 4>();
  checkTileMathOnGpu<256, 2>();
  checkTileMathOnGpu<512, 4>();
  checkTileMathOnGpu<512, 2>();
}

}  // namespace
}  // namespace test
}  // namespace coccl
