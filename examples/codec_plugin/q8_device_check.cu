// q8_device_check PLUGIN.so: the plug-in's device operations give the host's bytes. For every
// dtype (fp32, fp16, bf16), block (32, 64, 128) and a few counts (partial blocks, a NaN / Inf
// block), it runs encode, decode, decodeAccumulate (n = 3) and decodeReduceEncode (p = 4, each
// owner, scale 1 and 1/4) on the host and on the GPU and compares the outputs bit for bit.
// Exit status 0 when everything matches, 1 on a mismatch, 2 when it cannot run.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "coccl_codec.h"

namespace {

const cocclCodecPlugin_v1_t* g_d;
int g_bad = 0;

#define CUDA_OK(x)                                                           \
  do {                                                                       \
    cudaError_t e_ = (x);                                                    \
    if (e_ != cudaSuccess) {                                                 \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));               \
      exit(2);                                                               \
    }                                                                        \
  } while (0)

// A device copy of a host buffer, freed on scope exit.
struct Dev {
  void* p = nullptr;
  size_t n = 0;
  explicit Dev(size_t bytes, const void* src = nullptr) : n(bytes) {
    CUDA_OK(cudaMalloc(&p, bytes ? bytes : 1));
    if (src) CUDA_OK(cudaMemcpy(p, src, bytes, cudaMemcpyHostToDevice));
    else CUDA_OK(cudaMemset(p, 0, bytes ? bytes : 1));
  }
  ~Dev() { cudaFree(p); }
  std::vector<uint8_t> get() const {
    std::vector<uint8_t> v(n);
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(v.data(), p, n, cudaMemcpyDeviceToHost));
    return v;
  }
};

void same(const char* what, const char* spec, int dt, size_t count, const std::vector<uint8_t>& h,
          const std::vector<uint8_t>& d) {
  if (h == d) return;
  size_t i = 0;
  while (h[i] == d[i]) ++i;
  if (g_bad++ < 10)
    fprintf(stderr, "MISMATCH %s %s dtype %d count %zu: byte %zu host %02x device %02x\n", what,
            spec, dt, count, i, h[i], d[i]);
}

// count elements of dt: fp32 N(0, 1) * 3^k, bf16 its top 16 bits, fp16 scattered finite bit
// patterns; poisoned: NaN, +Inf, -Inf every 101 elements.
std::vector<uint8_t> input(int dt, size_t count, uint32_t seed, bool poison) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const size_t es = dt == cocclFloat32 ? 4 : 2;
  std::vector<uint8_t> v(count * es);
  for (size_t i = 0; i < count; ++i) {
    float x = nd(rng) * std::pow(3.0f, static_cast<float>(i / 97 % 5) - 2.0f);
    if (poison && i % 101 == 3) x = i % 3 == 0 ? NAN : (i % 3 == 1 ? INFINITY : -INFINITY);
    uint32_t u;
    memcpy(&u, &x, 4);
    if (es == 4) memcpy(&v[i * 4], &u, 4);
    else if (dt == cocclBfloat16) { const uint16_t h = u >> 16; memcpy(&v[i * 2], &h, 2); }
    else {  // any finite fp16 bit pattern (subnormals and 65504 included); NaN / Inf when poisoned
      uint16_t h = static_cast<uint16_t>((u >> 16 & 0x8000) | (i * 2654435761u & 0x7bff));
      if (poison && i % 101 == 3) h = i % 3 == 0 ? 0x7e00 : (i % 3 == 1 ? 0x7c00 : 0xfc00);
      memcpy(&v[i * 2], &h, 2);
    }
  }
  return v;
}

void checkOne(void* inst, const char* spec, int dt, size_t count, bool poison) {
  const size_t es = dt == cocclFloat32 ? 4 : 2, pb = g_d->encodedBytes(inst, count, dt);
  const int p = 4;
  std::vector<std::vector<uint8_t>> raw, pay;
  for (int r = 0; r < p; ++r) {
    raw.push_back(input(dt, count, 1000u * r + static_cast<uint32_t>(count), poison && r == 1));
    pay.emplace_back(pb);
    g_d->host.encode(inst, raw[r].data(), dt, count, pay[r].data(), nullptr);
    Dev in(raw[r].size(), raw[r].data()), out(pb);
    g_d->device.encode(inst, in.p, dt, count, out.p, nullptr, 0);
    same("encode", spec, dt, count, pay[r], out.get());
  }
  std::vector<uint8_t> dec(count * es);
  g_d->host.decode(inst, pay[0].data(), count, dt, dec.data(), nullptr);
  Dev pin(pb, pay[0].data()), dout(count * es);
  g_d->device.decode(inst, pin.p, count, dt, dout.p, nullptr, 0);
  same("decode", spec, dt, count, dec, dout.get());

  std::vector<float> acc(count, 0.25f);
  std::vector<Dev*> dp;
  const void* hins[p];
  const void* dins[p];
  for (int r = 0; r < p; ++r) {
    dp.push_back(new Dev(pb, pay[r].data()));
    hins[r] = pay[r].data();
    dins[r] = dp[r]->p;
  }
  Dev dacc(count * 4, acc.data());
  g_d->host.decodeAccumulate(inst, hins, 3, count, dt, acc.data(), nullptr);
  g_d->device.decodeAccumulate(inst, dins, 3, count, dt, static_cast<float*>(dacc.p), nullptr, 0);
  // fp32 accumulators: NaN == NaN (x86 propagates the NaN operand's bits, the GPU returns its
  // canonical NaN; the payloads coccl sends are unaffected: every NaN encodes as code -128)
  std::vector<uint8_t> da = dacc.get();
  std::vector<float> dv(count);
  memcpy(dv.data(), da.data(), da.size());
  for (size_t i = 0; i < count; ++i)
    if (std::isnan(acc[i]) && std::isnan(dv[i])) dv[i] = acc[i];
  std::vector<uint8_t> ha(count * 4), dc(count * 4);
  memcpy(ha.data(), acc.data(), ha.size());
  memcpy(dc.data(), dv.data(), dc.size());
  same("decodeAccumulate", spec, dt, count, ha, dc);

  for (int self = 0; self < p; ++self)
    for (float scale : {1.0f, 0.25f}) {
      std::vector<uint8_t> hout(pb), hdec(count * es);
      g_d->host.decodeReduceEncode(inst, hins, p, self, raw[self].data(), dt, count, scale,
                                   hout.data(), hdec.data(), nullptr);
      Dev self_in(raw[self].size(), raw[self].data()), o(pb), d(count * es);
      g_d->device.decodeReduceEncode(inst, dins, p, self, self_in.p, dt, count, scale, o.p, d.p,
                                     nullptr, 0);
      same("decodeReduceEncode out", spec, dt, count, hout, o.get());
      same("decodeReduceEncode decoded", spec, dt, count, hdec, d.get());
      // in place: selfIn == decoded
      g_d->device.decodeReduceEncode(inst, dins, p, self, self_in.p, dt, count, scale, o.p,
                                     self_in.p, nullptr, 0);
      same("decodeReduceEncode in-place", spec, dt, count, hdec, self_in.get());
    }
  for (Dev* x : dp) delete x;
  CUDA_OK(cudaGetLastError());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: q8_device_check PLUGIN.so\n");
    return 2;
  }
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) return fprintf(stderr, "%s\n", dlerror()), 2;
  g_d = static_cast<const cocclCodecPlugin_v1_t*>(dlsym(h, COCCL_CODEC_PLUGIN_SYMBOL_V1));
  if (!g_d || !(g_d->capabilities & COCCL_CODEC_CAP_DEVICE))
    return fprintf(stderr, "%s: no descriptor with device operations\n", argv[1]), 2;
  int cases = 0;
  for (const char* params : {"block=32", "block=64", "block=128"}) {
    void* inst = nullptr;
    char err[256];
    if (g_d->create(params, &inst, err, sizeof(err)) != 0) return fprintf(stderr, "%s\n", err), 2;
    for (int dt : {cocclFloat32, cocclFloat16, cocclBfloat16})
      for (size_t count : {1, 31, 64, 65, 1000, 4099, 100003})
        for (bool poison : {false, true}) {
          checkOne(inst, params, dt, count, poison);
          ++cases;
        }
    g_d->destroy(inst);
  }
  printf("q8_device_check: %d cases, %d mismatches\n", cases, g_bad);
  return g_bad ? 1 : 0;
}
