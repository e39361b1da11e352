// The int4 plug-in's device operations against its host operations, byte for byte (label gpu):
// the descriptor is taken from the plug-in file with dlopen (the public ABI only, no coccl
// library), then for every block size, rotate 0 / 1 / auto, round rne / stochastic, fp32 / fp16
// / bf16, odd counts and edge blocks (NaN, +-Inf, zeros, -0.0, tiny, subnormal, huge, mean
// shifted), with aligned and unaligned typed buffers: encode, decode (to every type),
// decodeAccumulate (n = 1, 3) and decodeReduceEncode (p = 1, 4; scale 1 and 1/p; decoded output
// or none). Guard bytes after every device output must stay. Int4DeviceBench prints encode /
// decode bandwidth of 256 MiB bf16 next to a device-to-device copy (issue 16: >= 80%).
// Skips without a CUDA device.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "coccl_codec.h"

namespace {

// The plug-in file: $COCCL_INT4_PLUGIN_FILE (e.g. another build's, to compare), else the one of
// this build tree.
const char* pluginFile() {
  const char* f = std::getenv("COCCL_INT4_PLUGIN_FILE");
  return f != nullptr && *f != '\0' ? f : COCCL_INT4_PLUGIN;
}

const cocclCodecPlugin_v1_t* plugin() {
  static const cocclCodecPlugin_v1_t* d = [] {
    void* h = dlopen(pluginFile(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) return static_cast<const cocclCodecPlugin_v1_t*>(nullptr);
    return static_cast<const cocclCodecPlugin_v1_t*>(dlsym(h, COCCL_CODEC_PLUGIN_SYMBOL_V1));
  }();
  return d;
}

bool haveGpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define REQUIRE_GPU()                                               \
  do {                                                              \
    if (!haveGpu()) GTEST_SKIP() << "no CUDA device";               \
    ASSERT_NE(plugin(), nullptr) << "cannot load " << pluginFile(); \
    ASSERT_TRUE(plugin()->capabilities& COCCL_CODEC_CAP_DEVICE);    \
  } while (0)

struct Inst {
  void* p = nullptr;
  explicit Inst(const std::string& params) {
    char err[256] = {0};
    EXPECT_EQ(plugin()->create(params.c_str(), &p, err, sizeof err), 0) << err;
  }
  ~Inst() { plugin()->destroy(p); }
};

// Device buffer with 64 guard bytes (0xa5) after `bytes` and `offset` bytes before the data.
struct Dev {
  uint8_t* base = nullptr;
  size_t bytes = 0, offset = 0;
  Dev(size_t n, size_t off = 0) : bytes(n), offset(off) {
    EXPECT_EQ(cudaMalloc(&base, n + off + 64), cudaSuccess);
    cudaMemset(base, 0xa5, n + off + 64);
  }
  Dev(const std::vector<uint8_t>& v, size_t off = 0) : Dev(v.size(), off) {
    cudaMemcpy(base + off, v.data(), v.size(), cudaMemcpyHostToDevice);
  }
  ~Dev() { cudaFree(base); }
  uint8_t* data() { return base + offset; }
  std::vector<uint8_t> get() {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<uint8_t> all(bytes + 64);
    cudaMemcpy(all.data(), base + offset, all.size(), cudaMemcpyDeviceToHost);
    for (size_t i = bytes; i < all.size(); ++i) EXPECT_EQ(all[i], 0xa5) << "write past the end";
    all.resize(bytes);
    return all;
  }
};

size_t tsize(int dt) { return dt == cocclFloat32 ? 4 : 2; }

uint16_t toHalfBits(float f, int dt) {  // truncating conversions suffice for test inputs
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (dt == cocclBfloat16) return static_cast<uint16_t>(u >> 16);
  const uint32_t s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) return static_cast<uint16_t>(s | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u));
  if (a >= 0x47800000u) return static_cast<uint16_t>(s | 0x7bffu);
  if (a < 0x38800000u) return static_cast<uint16_t>(s | (a < 0x33800000u ? 0u : 1u));
  return static_cast<uint16_t>(s | ((a - 0x38000000u) >> 13));
}

std::vector<uint8_t> typed(const std::vector<float>& x, int dt) {
  std::vector<uint8_t> b(x.size() * tsize(dt));
  for (size_t i = 0; i < x.size(); ++i) {
    if (dt == cocclFloat32) {
      std::memcpy(&b[4 * i], &x[i], 4);
    } else {
      const uint16_t h = toHalfBits(x[i], dt);
      std::memcpy(&b[2 * i], &h, 2);
    }
  }
  return b;
}

// Blocks of g: kind = block index mod 9 picks normal, shifted, zeros / -0.0, NaN, +-Inf, tiny,
// subnormal, huge, Laplace.
std::vector<float> edgeInput(size_t n, size_t g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::exponential_distribution<float> ed(1.0f);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    const size_t kind = (i / g) % 9;
    float v = nd(rng);
    switch (kind) {
      case 1: v += 4.0f; break;
      case 2: v = (i & 1) ? -0.0f : 0.0f; break;
      case 3: if (i % 7 == 3) v = std::nanf(""); break;
      case 4: if (i % 5 == 1) v = (i & 2) ? INFINITY : -INFINITY; break;
      case 5: v *= 1e-30f; break;
      case 6: v *= 1e-41f; break;
      case 7: v *= 3e37f; break;
      case 8: v = (rng() & 1 ? 1.0f : -1.0f) * ed(rng); break;
      default: break;
    }
    x[i] = v;
  }
  return x;
}

const size_t kCounts[] = {1, 7, 31, 33, 127, 129, 2305, 100003};
const int kTypes[] = {cocclFloat32, cocclFloat16, cocclBfloat16};

std::vector<std::string> specs() {
  std::vector<std::string> s;
  for (int g : {32, 64, 128, 256, 512, 1024, 2048})
    for (const char* r : {"0", "1", "auto"})
      for (const char* q : {"rne", "stochastic,seed=77"})
        s.push_back("block=" + std::to_string(g) + ",rotate=" + r + ",round=" + q);
  return s;
}

std::vector<uint8_t> hostEncode(const Inst& c, const std::vector<uint8_t>& in, int dt, size_t n) {
  std::vector<uint8_t> out(plugin()->encodedBytes(c.p, n, dt));
  EXPECT_EQ(plugin()->host.encode(c.p, in.data(), dt, n, out.data(), nullptr), 0);
  return out;
}

TEST(Int4Device, EncodeAndDecodeMatchTheHost) {
  REQUIRE_GPU();
  for (const std::string& spec : specs()) {
    Inst c(spec);
    const size_t g = plugin()->blockElems(c.p);
    for (int dt : kTypes)
      for (size_t n : kCounts)
        for (size_t off : {size_t(0), tsize(dt)}) {
          SCOPED_TRACE(spec + " dtype " + std::to_string(dt) + " n " + std::to_string(n) +
                       " offset " + std::to_string(off));
          const std::vector<uint8_t> in = typed(edgeInput(n, g, n * 31 + g), dt);
          const std::vector<uint8_t> want = hostEncode(c, in, dt, n);
          Dev din(in, off), dout(want.size());
          ASSERT_EQ(plugin()->device.encode(c.p, din.data(), dt, n, dout.data(), nullptr, nullptr), 0);
          ASSERT_EQ(dout.get(), want) << "encode";
          for (int ot : kTypes) {
            std::vector<uint8_t> hd(n * tsize(ot));
            ASSERT_EQ(plugin()->host.decode(c.p, want.data(), n, ot, hd.data(), nullptr), 0);
            Dev dpay(want), ddec(hd.size(), off ? tsize(ot) : 0);
            ASSERT_EQ(plugin()->device.decode(c.p, dpay.data(), n, ot, ddec.data(), nullptr, nullptr), 0);
            ASSERT_EQ(ddec.get(), hd) << "decode to dtype " << ot;
          }
        }
  }
}

TEST(Int4Device, AccumulateAndOwnerStepMatchTheHost) {
  REQUIRE_GPU();
  for (const std::string& spec : specs()) {
    Inst c(spec);
    const size_t g = plugin()->blockElems(c.p);
    for (int dt : kTypes)
      for (size_t n : {size_t(33), size_t(2305), size_t(100003)}) {
        SCOPED_TRACE(spec + " dtype " + std::to_string(dt) + " n " + std::to_string(n));
        const int P = 4;
        std::vector<std::vector<uint8_t>> raw(P), pay(P);
        std::vector<Dev*> dpay;
        for (int r = 0; r < P; ++r) {
          raw[r] = typed(edgeInput(n, g, 1000 + 17 * r + n), dt);
          pay[r] = hostEncode(c, raw[r], dt, n);
          dpay.push_back(new Dev(pay[r]));
        }
        std::vector<float> acc0(n);
        for (size_t i = 0; i < n; ++i) acc0[i] = 0.25f * static_cast<float>(i % 13);
        std::vector<uint8_t> accBytes(4 * n);
        std::memcpy(accBytes.data(), acc0.data(), 4 * n);
        for (int k : {1, 3}) {
          std::vector<const void*> hins, dins;
          for (int r = 0; r < k; ++r) hins.push_back(pay[r].data()), dins.push_back(dpay[r]->data());
          std::vector<float> hacc = acc0;
          ASSERT_EQ(plugin()->host.decodeAccumulate(c.p, hins.data(), k, n, dt, hacc.data(), nullptr), 0);
          Dev dacc(accBytes);
          ASSERT_EQ(plugin()->device.decodeAccumulate(c.p, dins.data(), k, n, dt,
                                                      reinterpret_cast<float*>(dacc.data()), nullptr, nullptr), 0);
          std::vector<uint8_t> got = dacc.get(), want(4 * n);
          std::memcpy(want.data(), hacc.data(), 4 * n);
          ASSERT_EQ(got, want) << "decodeAccumulate n=" << k;
        }
        for (int p : {1, 4})
          for (int self : {0, p - 1})
            for (bool withDecoded : {true, false}) {
              const float scale = p == 1 ? 1.0f : 1.0f / static_cast<float>(p);
              std::vector<const void*> hins(p), dins(p);
              for (int r = 0; r < p; ++r) {
                hins[r] = r == self ? nullptr : pay[r].data();
                dins[r] = r == self ? nullptr : dpay[r]->data();
              }
              std::vector<uint8_t> hout(pay[0].size()), hdec(n * tsize(dt));
              ASSERT_EQ(plugin()->host.decodeReduceEncode(c.p, hins.data(), p, self, raw[self].data(), dt, n,
                                                          scale, hout.data(), hdec.data(), nullptr), 0);
              Dev dself(raw[self]), dout(hout.size()), ddec(hdec.size());
              ASSERT_EQ(plugin()->device.decodeReduceEncode(c.p, dins.data(), p, self, dself.data(), dt, n, scale,
                                                            dout.data(), withDecoded ? ddec.data() : nullptr,
                                                            nullptr, nullptr), 0);
              ASSERT_EQ(dout.get(), hout) << "decodeReduceEncode p=" << p << " self=" << self;
              if (withDecoded) {
                ASSERT_EQ(ddec.get(), hdec) << "decoded output p=" << p;
              }
            }
        for (Dev* d : dpay) delete d;
      }
  }
}

TEST(Int4Device, Bench256MiBBf16) {
  REQUIRE_GPU();
  const size_t bytes = size_t(256) << 20, n = bytes / 2;
  for (const char* spec : {"", "rotate=0", "rotate=1", "block=32", "block=2048"}) {
    Inst c(spec);
    const size_t pb = plugin()->encodedBytes(c.p, n, cocclBfloat16);
    std::vector<float> x(1u << 20);
    std::mt19937 rng(1);
    std::normal_distribution<float> nd;
    for (float& v : x) v = nd(rng);
    const std::vector<uint8_t> chunk = typed(x, cocclBfloat16);
    Dev in(bytes), out(bytes), pay(pb);
    for (size_t at = 0; at < bytes; at += chunk.size())
      cudaMemcpy(in.data() + at, chunk.data(), std::min(chunk.size(), bytes - at), cudaMemcpyHostToDevice);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    auto time = [&](auto fn) {
      for (int i = 0; i < 3; ++i) fn();
      std::vector<float> t;
      for (int i = 0; i < 10; ++i) {
        cudaEventRecord(a);
        fn();
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        t.push_back(ms);
      }
      std::sort(t.begin(), t.end());
      return double(t[t.size() / 2]);
    };
    const double copy = time([&] { cudaMemcpyAsync(out.data(), in.data(), bytes, cudaMemcpyDeviceToDevice); });
    const double enc = time([&] { plugin()->device.encode(c.p, in.data(), cocclBfloat16, n, pay.data(), nullptr, nullptr); });
    const double dec = time([&] { plugin()->device.decode(c.p, pay.data(), n, cocclBfloat16, out.data(), nullptr, nullptr); });
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const double cg = 2.0 * bytes / copy / 1e6, eg = double(bytes + pb) / enc / 1e6, dg = double(bytes + pb) / dec / 1e6;
    std::printf("int4:%-12s copy %.3f ms %.0f GB/s | encode %.3f ms %.0f GB/s %.1f%% | decode %.3f ms %.0f GB/s %.1f%%\n",
                spec, copy, cg, enc, eg, 100 * eg / cg, dec, dg, 100 * dg / cg);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
}

}  // namespace
