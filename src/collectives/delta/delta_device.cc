// The device difference mode of cocclAllGatherDelta (delta_device.h).
#include "collectives/delta/delta_device.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "codecs/codec.h"
#include "collectives/layout.h"
#include "core/dtype.h"
#include "core/error.h"
#include "mem/cuda_check.h"

namespace coccl {
struct DeltaDevice::Impl {
  int device = -1;
  float* f = nullptr;  // one piece's fp32 differences / decoded values
  size_t fBytes = 0;
  char* gath = nullptr;  // p payloads of one piece
  size_t gathBytes = 0;
  void* ws = nullptr;  // the codec's workspace
  size_t wsBytes = 0;
  cudaEvent_t tail = nullptr;  // the end of the last call issued outside a capture
  bool tailSet = false;
  std::string algo;  // CollStats::algorithm

  ~Impl() {
    DeviceGuard g(device, DeviceGuard::kNoThrow);
    if (tail) COCCL_CUDA_WARN(cudaEventDestroy(tail));
    if (f) COCCL_CUDA_WARN(cudaFree(f));
    if (gath) COCCL_CUDA_WARN(cudaFree(gath));
    if (ws) COCCL_CUDA_WARN(cudaFree(ws));
  }

  // Grows `buf` to `need` bytes (never during a capture: cudaFree / cudaMalloc).
  template <class T>
  void grow(T*& buf, size_t& have, size_t need, cudaStream_t s, const char* what) {
    if (need <= have) return;
    COCCL_CHECK_USAGE(!streamCapturing(s),
                      "AllGatherDelta on device buffers needs %zu bytes of %s scratch: run the "
                      "call once outside the CUDA graph capture first (the scratch then stays)",
                      need, what);
    COCCL_CUDA_CHECK(cudaDeviceSynchronize());
    if (buf) COCCL_CUDA_CHECK(cudaFree(buf));
    buf = nullptr;
    have = 0;
    void* p = nullptr;
    COCCL_CUDA_CHECK(cudaMalloc(&p, need));
    buf = static_cast<T*>(p);
    have = need;
  }
};

DeltaDevice::DeltaDevice(int device) : impl_(std::make_unique<Impl>()) {
  impl_->device = device;
}
DeltaDevice::~DeltaDevice() = default;
bool DeltaDevice::built() {
  return true;
}

void DeltaDevice::run(const CollRequest& r, int p, int me, size_t chunkBytes, const Gather& gather,
                      CollStats& stats) {
  Impl& m = *impl_;
  const Codec& codec = *r.codec;
  const cocclDataType_t dt = r.dt;
  const size_t count = r.count, es = dtypeSize(dt);
  const size_t chunk = chunkElems(chunkBytes, es, codec.blockElems());
  const size_t K = numChunks(count, chunk);
  stats.algorithm = "delta";
  if (K == 0) return;
  DeviceGuard g(m.device);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(r.stream);
  const size_t first = std::min(chunk, count);  // the largest piece
  // Each rank's payload at a 256-byte aligned offset: the codecs' device decoders load it in
  // 16-byte words (a 4-byte aligned stride gave "misaligned address" on an H200).
  auto strideOf = [&](size_t n) { return (codec.encodedBytes(n, cocclFloat32) + 255) / 256 * 256; };
  m.grow(m.f, m.fBytes, first * sizeof(float), s, "fp32");
  m.grow(m.gath, m.gathBytes, static_cast<size_t>(p) * strideOf(first), s, "payload");
  const size_t wsNeed = codec.deviceWorkspaceBytes(first, cocclFloat32, 1);
  m.grow(m.ws, m.wsBytes, wsNeed, s, "codec workspace");
  void* ws = wsNeed ? m.ws : nullptr;
  if (!m.tail) COCCL_CUDA_CHECK(cudaEventCreateWithFlags(&m.tail, cudaEventDisableTiming));
  const bool eager = !streamCapturing(s);
  if (eager && m.tailSet) COCCL_CUDA_CHECK(cudaStreamWaitEvent(s, m.tail, 0));

  const auto* in = static_cast<const char*>(r.in);
  auto* out = static_cast<char*>(r.out);
  const Range whole{0, count};
  size_t wire = 0;
  const char* innerAlgo = "";
  for (size_t k = 0; k < K; ++k) {
    const Range c = chunkOf(whole, chunk, k);
    const size_t stride = strideOf(c.count);
    char* mine = m.gath + static_cast<size_t>(me) * stride;
    launchDeltaDiff(in + c.begin * es, out + (static_cast<size_t>(me) * count + c.begin) * es, dt,
                    c.count, m.f, r.stream);
    codec.deviceEncode(m.f, cocclFloat32, c.count, mine, ws, s);
    CollRequest x;
    x.coll = Coll::AllGather;
    x.in = mine;
    x.out = m.gath;
    x.count = stride;
    x.dt = cocclUint8;
    x.stream = r.stream;
    x.mem = MemKind::Device;
    CollStats xs;
    gather(x, xs);
    wire += xs.wireBytesSent;
    innerAlgo = xs.algorithm;
    for (int j = 0; j < p; ++j) {
      codec.deviceDecode(m.gath + static_cast<size_t>(j) * stride, c.count, cocclFloat32, m.f, ws,
                         s);
      launchDeltaApply(out + (static_cast<size_t>(j) * count + c.begin) * es, m.f, dt, c.count,
                       r.stream);
    }
  }
  if (eager) {
    COCCL_CUDA_CHECK(cudaEventRecord(m.tail, s));
    m.tailSet = true;
  }
  m.algo = std::string("delta/") + innerAlgo;
  stats.algorithm = m.algo.c_str();
  stats.wireBytesSent += wire;
}

}  // namespace coccl
