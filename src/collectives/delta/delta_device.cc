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
#include "mem/device_scratch.h"

namespace coccl {
struct DeltaDevice::Impl {
  int device = -1;
  DeviceScratch f;             // one piece's fp32 differences / decoded values
  DeviceScratch gath;          // p payloads of one piece
  DeviceScratch ws;            // the codec's workspace
  cudaEvent_t tail = nullptr;  // the end of the last call issued outside a capture
  bool tailSet = false;
  std::string algo;  // CollStats::algorithm

  ~Impl() {
    DeviceGuard g(device, DeviceGuard::kNoThrow);
    if (tail) COCCL_CUDA_WARN(cudaEventDestroy(tail));
    for (DeviceScratch* b : {&f, &gath, &ws}) b->release();
  }

  // `buf` with at least `need` bytes (never grown during a capture: cudaMalloc).
  static char* grow(DeviceScratch& buf, size_t need, cudaStream_t s, const char* what) {
    if (!buf.fits(need))
      COCCL_CHECK_USAGE(!streamCapturing(s),
                        "AllGatherDelta on device buffers needs %zu bytes of %s scratch: run the "
                        "call once outside the CUDA graph capture first (the scratch then stays)",
                        need, what);
    return static_cast<char*>(buf.grow(need));
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
  auto* f = reinterpret_cast<float*>(Impl::grow(m.f, first * sizeof(float), s, "fp32"));
  char* gath = Impl::grow(m.gath, static_cast<size_t>(p) * strideOf(first), s, "payload");
  const size_t wsNeed = codec.deviceWorkspaceBytes(first, cocclFloat32, 1);
  void* ws = wsNeed ? Impl::grow(m.ws, wsNeed, s, "codec workspace") : nullptr;
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
    char* mine = gath + static_cast<size_t>(me) * stride;
    launchDeltaDiff(in + c.begin * es, out + (static_cast<size_t>(me) * count + c.begin) * es, dt,
                    c.count, f, r.stream);
    codec.deviceEncode(f, cocclFloat32, c.count, mine, ws, s);
    CollRequest x;
    x.coll = Coll::AllGather;
    x.in = mine;
    x.out = gath;
    x.count = stride;
    x.dt = cocclUint8;
    x.stream = r.stream;
    x.mem = MemKind::Device;
    CollStats xs;
    gather(x, xs);
    wire += xs.wireBytesSent;
    innerAlgo = xs.algorithm;
    for (int j = 0; j < p; ++j) {
      codec.deviceDecode(gath + static_cast<size_t>(j) * stride, c.count, cocclFloat32, f, ws, s);
      launchDeltaApply(out + (static_cast<size_t>(j) * count + c.begin) * es, f, dt, c.count,
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
