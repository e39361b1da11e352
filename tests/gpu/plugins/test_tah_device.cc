// tah plug-in: the device operations give the host's bytes, for encode, decode,
// decodeAccumulate and decodeReduceEncode on fp32, fp16 and bf16 (several shapes: partial last
// rows, outlier channels, equal rows; decode also of garbage payloads), then encode / decode of
// 256 MiB bf16 timed beside a device-to-device copy.
// Usage: test_tah_device <libcoccl-codec-tah.so> [--no-perf | --perf-only]
// Exit 0: identical; 1: a difference or a failure; 77: no CUDA device (ctest: skipped).
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "coccl_codec.h"
#include "tah_codec.h"  // tah_instance_t: the garbage payloads' header size
#include "tah_math.h"

namespace {

const cocclCodecPlugin_v1_t* D = nullptr;
int failures = 0;

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

struct Dev {  // a device buffer of n bytes
  void* p = nullptr;
  explicit Dev(size_t n) { CK(cudaMalloc(&p, n ? n : 1)); }
  ~Dev() { cudaFree(p); }
};

std::vector<uint8_t> toHost(const void* d, size_t n) {
  std::vector<uint8_t> h(n);
  CK(cudaMemcpy(h.data(), d, n, cudaMemcpyDeviceToHost));
  return h;
}
void* upload(Dev& d, const std::vector<uint8_t>& h) {
  CK(cudaMemcpy(d.p, h.data(), h.size(), cudaMemcpyHostToDevice));
  return d.p;
}

void expectSame(const std::vector<uint8_t>& host, const std::vector<uint8_t>& dev,
                const std::string& what) {
  size_t first = host.size(), diff = 0;
  for (size_t i = 0; i < host.size(); ++i)
    if (host[i] != dev[i]) diff += 1, first = std::min(first, i);
  if (host.size() != dev.size() || diff) {
    ++failures;
    std::printf("FAIL %s: %zu of %zu bytes differ (first at %zu)\n", what.c_str(), diff,
                host.size(), first);
  } else {
    std::printf("ok   %s (%zu bytes)\n", what.c_str(), host.size());
  }
}

// Decoded values: the same bits, except that any two NaNs of an fp32 output are alike (a GPU's
// arithmetic gives its canonical NaN where the host's keeps an input NaN's payload; 16-bit
// outputs convert every NaN to the same constant on both).
void expectSameValues(const std::vector<uint8_t>& host, const std::vector<uint8_t>& dev, int dtype,
                      const std::string& what) {
  if (dtype != TAH_DT_F32 || host.size() != dev.size()) return expectSame(host, dev, what);
  std::vector<uint8_t> d = dev;
  for (size_t i = 0; i + 4 <= d.size(); i += 4) {
    float a, b;
    std::memcpy(&a, &host[i], 4);
    std::memcpy(&b, &d[i], 4);
    if (a != a && b != b) std::memcpy(&d[i], &host[i], 4);
  }
  expectSame(host, d, what);
}

std::vector<uint8_t> input(size_t n, size_t R, int dtype, int kind, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<uint8_t> out(n * (dtype == TAH_DT_F32 ? 4 : 2));
  std::vector<float> row0(R);
  for (size_t i = 0; i < R; ++i) row0[i] = nd(g);
  for (size_t i = 0; i < n; ++i) {
    float v = nd(g);
    if (kind == 1 && (i % R) % 97 == 5) v *= 40.0f;  // outlier channels
    if (kind == 2 && g() % 500 == 0) v = 3000.0f;    // a few huge elements
    if (kind == 3) v = row0[i % R];                  // equal rows: ties by index
    tah_store(out.data(), dtype, i, v);
  }
  return out;
}

void checkShape(void* inst, const char* spec, size_t n, size_t R, int dtype, int kind) {
  const std::string tag = std::string(spec) + " n=" + std::to_string(n) +
                          " dtype=" + std::to_string(dtype) + " kind=" + std::to_string(kind);
  const size_t es = dtype == TAH_DT_F32 ? 4 : 2, pb = D->encodedBytes(inst, n, dtype);
  const size_t wsH = D->workspaceBytes(inst, n, dtype, 3, 0),
               wsD = D->workspaceBytes(inst, n, dtype, 3, 1);
  std::vector<uint8_t> hws(wsH + 256);
  void* hw = hws.data() + ((256 - (reinterpret_cast<uintptr_t>(hws.data()) & 255)) & 255);
  // dRed: the owner step's payload (pb bytes; more than n * es for tiny n)
  Dev dws(wsD), dIn(n * es), dPay(pb), dOut(n * es), dAcc(4 * n), dP0(pb), dP2(pb), dRed(pb);
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  // encode
  std::vector<std::vector<uint8_t>> raw(3), pay(3);
  for (int r = 0; r < 3; ++r) {
    raw[r] = input(n, R, dtype, r == 1 ? kind : (kind == 3 ? 3 : 0), 100 + r + kind);
    pay[r].resize(pb);
    if (D->host.encode(inst, raw[r].data(), dtype, n, pay[r].data(), hw)) ++failures;
    upload(dIn, raw[r]);
    if (D->device.encode(inst, dIn.p, dtype, n, dPay.p, dws.p, s)) ++failures;
    CK(cudaStreamSynchronize(s));
    expectSame(pay[r], toHost(dPay.p, pb), "encode " + tag + " input " + std::to_string(r));
  }
  // decode
  std::vector<uint8_t> hOut(n * es);
  D->host.decode(inst, pay[1].data(), n, dtype, hOut.data(), hw);
  D->device.decode(inst, upload(dPay, pay[1]), n, dtype, dOut.p, dws.p, s);
  CK(cudaStreamSynchronize(s));
  expectSame(hOut, toHost(dOut.p, n * es), "decode " + tag);
  // garbage: random bytes, and a valid payload whose header and metas are partly random (rows
  // outside the code section, 3-bit rows anywhere, NaN / Inf / negative scales and zeros)
  {
    std::mt19937 gen(static_cast<unsigned>(n + dtype));
    std::vector<uint8_t> junk(pb), bent = pay[1];
    for (uint8_t& b : junk) b = static_cast<uint8_t>(gen());
    const size_t codeOff = tah_layout(n, R, static_cast<const tah_instance_t*>(inst)->lowL).codeOff;
    for (size_t i = 0; i < codeOff && i < bent.size(); ++i)
      if (gen() % 4 == 0) bent[i] = static_cast<uint8_t>(gen());
    for (const auto* g : {&junk, &bent}) {
      D->host.decode(inst, g->data(), n, dtype, hOut.data(), hw);
      D->device.decode(inst, upload(dPay, *g), n, dtype, dOut.p, dws.p, s);
      CK(cudaStreamSynchronize(s));
      expectSameValues(hOut, toHost(dOut.p, n * es), dtype,
                       std::string("garbage decode (") + (g == &junk ? "random" : "bent header") +
                           ") " + tag);
    }
  }
  // decodeAccumulate of three payloads onto a non-zero acc
  std::vector<float> acc(n);
  for (size_t i = 0; i < n; ++i) acc[i] = 0.25f * static_cast<float>(i % 7);
  std::vector<uint8_t> accB(4 * n);
  std::memcpy(accB.data(), acc.data(), 4 * n);
  upload(dAcc, accB);
  const void* hIns[3] = {pay[0].data(), pay[1].data(), pay[2].data()};
  upload(dP0, pay[0]);
  upload(dPay, pay[1]);  // the garbage decodes above left their payloads there
  upload(dP2, pay[2]);
  const void* dIns[3] = {dP0.p, dPay.p, dP2.p};
  D->host.decodeAccumulate(inst, hIns, 3, n, dtype, acc.data(), hw);
  D->device.decodeAccumulate(inst, dIns, 3, n, dtype, static_cast<float*>(dAcc.p), dws.p, s);
  CK(cudaStreamSynchronize(s));
  std::memcpy(accB.data(), acc.data(), 4 * n);
  expectSame(accB, toHost(dAcc.p, 4 * n), "decodeAccumulate " + tag);
  // decodeReduceEncode, p = 3, self = 1, Sum and Avg; decoded in place of selfIn on the device
  for (float scale : {1.0f, 1.0f / 3.0f}) {
    std::vector<uint8_t> hPay(pb), hDec(n * es);
    D->host.decodeReduceEncode(inst, hIns, 3, 1, raw[1].data(), dtype, n, scale, hPay.data(),
                               hDec.data(), hw);
    upload(dIn, raw[1]);
    D->device.decodeReduceEncode(inst, dIns, 3, 1, dIn.p, dtype, n, scale, dRed.p, dIn.p, dws.p, s);
    CK(cudaStreamSynchronize(s));
    const std::string t = " scale " + std::to_string(scale) + " " + tag;
    expectSame(hPay, toHost(dRed.p, pb), "decodeReduceEncode out" + t);
    expectSame(hDec, toHost(dIn.p, n * es), "decodeReduceEncode decoded" + t);
    // p = 1: the owner's input times scale, encoded on the fly
    D->host.decodeReduceEncode(inst, nullptr, 1, 0, raw[1].data(), dtype, n, scale, hPay.data(),
                               hDec.data(), hw);
    upload(dIn, raw[1]);
    D->device.decodeReduceEncode(inst, nullptr, 1, 0, dIn.p, dtype, n, scale, dRed.p, dIn.p, dws.p,
                                 s);
    CK(cudaStreamSynchronize(s));
    expectSame(hPay, toHost(dRed.p, pb), "decodeReduceEncode p 1 out" + t);
    expectSame(hDec, toHost(dIn.p, n * es), "decodeReduceEncode p 1 decoded" + t);
  }
  CK(cudaStreamDestroy(s));
}

void perf(void* inst, const char* spec) {
  std::printf("perf tah:%s\n", spec);
  const size_t n = (256u << 20) / 2, pb = D->encodedBytes(inst, n, TAH_DT_BF16);
  Dev in(2 * n), out(2 * n), pay(pb), ws(D->workspaceBytes(inst, n, TAH_DT_BF16, 1, 1));
  const std::vector<uint8_t> h = input(n, 4096, TAH_DT_BF16, 1, 9);
  upload(in, h);
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  auto time = [&](const char* what, auto fn) {
    fn();
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(a));
    for (int i = 0; i < 10; ++i) fn();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    const double t = ms / 10 / 1e3, gbs = 2.0 * n / t / 1e9;
    std::printf("perf %-28s %8.3f ms  %7.1f GB/s of bf16 input\n", what, t * 1e3, gbs);
    return gbs;
  };
  const double copy = time("cudaMemcpy D2D 256 MiB", [&] {
    CK(cudaMemcpyAsync(out.p, in.p, 2 * n, cudaMemcpyDeviceToDevice, 0));
  });
  const double enc = time("tah encode 256 MiB bf16",
                          [&] { D->device.encode(inst, in.p, TAH_DT_BF16, n, pay.p, ws.p, 0); });
  const double dec = time("tah decode 256 MiB bf16",
                          [&] { D->device.decode(inst, pay.p, n, TAH_DT_BF16, out.p, ws.p, 0); });
  std::printf("perf encode %.0f%% and decode %.0f%% of the copy (goal >= 70%%)\n", 100 * enc / copy,
              100 * dec / copy);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <libcoccl-codec-tah.so> [--no-perf | --perf-only]\n", argv[0]);
    return 1;
  }
  int devs = 0;
  if (cudaGetDeviceCount(&devs) != cudaSuccess || devs == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  D = static_cast<const cocclCodecPlugin_v1_t*>(dlsym(h, COCCL_CODEC_PLUGIN_SYMBOL_V1));
  if (!D || !(D->capabilities & COCCL_CODEC_CAP_DEVICE)) {
    std::fprintf(stderr, "%s: no cocclCodecPlugin_v1 with device operations\n", argv[1]);
    return 1;
  }
  struct Case {
    const char* params;
    size_t R;
  };
  // strict=0: the counts below include partial last rows (the default refuses them).
  // --perf-only: the timing alone (an older plug-in's, whose spec may lack a parameter below).
  const std::string opt = argc > 2 ? argv[2] : "";
  for (const Case c :
       {Case{"row=1024,strict=0", 1024}, Case{"row=64,low=0.5,strict=0", 64},
        Case{"row=4096,low=0.3,strict=0", 4096}, Case{"row=192,strict=0", 192},
        Case{"row=1024,strict=0,select=message", 1024}, Case{"row=8192,strict=0", 8192}}) {
    if (opt == "--perf-only") break;
    void* inst = nullptr;
    char err[256] = "";
    if (D->create(c.params, &inst, err, sizeof(err))) {
      std::fprintf(stderr, "create(%s): %s\n", c.params, err);
      return 1;
    }
    for (int dtype : {TAH_DT_F32, TAH_DT_F16, TAH_DT_BF16})
      for (int kind : {0, 1, 2, 3})
        for (size_t n : {c.R * 37, c.R * 300 + 333, size_t{7}, c.R * 33})
          checkShape(inst, c.params, n, c.R, dtype, kind);
    D->destroy(inst);
  }
  if (opt != "--no-perf") {
    void* inst = nullptr;
    char err[256] = "";
    D->create("row=4096", &inst, err, sizeof(err));
    perf(inst, "row=4096");
    D->destroy(inst);
    if (D->create("row=4096,select=message", &inst, err, sizeof(err)) == 0) {  // format >= 2
      perf(inst, "row=4096,select=message");
      D->destroy(inst);
    }
  }
  std::printf(failures ? "FAILED: %d differences\n" : "all identical\n", failures);
  return failures ? 1 : 0;
}
