// Launch plumbing, argument checks and the None codec (raw elements) of the device codec API.
// The None kernels are the None codec's folder (src/codecs/none/none_kernels.cuh).
#include <atomic>
#include <cstring>

#include "codecs/none/none_kernels.cuh"
#include "core/dtype.h"
#include "kernels/cuda/codec_kernels.cuh"

namespace coccl {
namespace kernels {

namespace detail {

void checkCuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    COCCL_THROW(cocclUnhandledCudaError, "%s: CUDA error %d (%s): %s", what, static_cast<int>(e),
                cudaGetErrorName(e), cudaGetErrorString(e));
}

int currentDevice() {
  int dev = 0;
  checkCuda(cudaGetDevice(&dev), "cudaGetDevice");
  return dev < 0 || dev >= kMaxDevices ? 0 : dev;
}

int smCount() {
  static std::atomic<int> cache[kMaxDevices];
  const int dev = currentDevice();
  int n = cache[dev].load(std::memory_order_relaxed);
  if (n == 0) {
    checkCuda(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev),
              "cudaDeviceGetAttribute");
    if (n <= 0) n = 1;
    cache[dev].store(n, std::memory_order_relaxed);
  }
  return n;
}

bool smemFits(int smemBytes, int minCtas) {
  static std::atomic<int> perSmCache[kMaxDevices], perCtaCache[kMaxDevices];
  const int dev = currentDevice();
  int perSm = perSmCache[dev].load(std::memory_order_relaxed);
  int perCta = perCtaCache[dev].load(std::memory_order_relaxed);
  if (perSm == 0) {
    checkCuda(cudaDeviceGetAttribute(&perSm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev),
              "cudaDeviceGetAttribute");
    checkCuda(cudaDeviceGetAttribute(&perCta, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
              "cudaDeviceGetAttribute");
    perCtaCache[dev].store(perCta, std::memory_order_relaxed);
    perSmCache[dev].store(perSm > 0 ? perSm : -1, std::memory_order_relaxed);
  }
  constexpr int kReservedPerCta = 1024;  // the driver's shared memory of every CTA (sm_80+)
  return smemBytes <= perCta && minCtas * (smemBytes + kReservedPerCta) <= perSm;
}

size_t elemBytes(cocclDataType_t dt) { return dtypeSize(dt); }  // 0 for an invalid type

static bool isReduceType(cocclDataType_t dt) { return isCompressibleType(dt); }

void checkDesc(const CodecDesc& d, const char* what) {
  if (d.kind == CodecKind::None) return;
  COCCL_CHECK_ARG(isKnownCodecKind(d.kind), "%s: unknown codec kind %d", what,
                  static_cast<int>(d.kind));
  COCCL_CHECK_ARG(
      d.block == 32 || d.block == 64 || d.block == 128 || d.block == 256 || d.block == 512,
      "%s: block %d (32, 64, 128, 256 or 512)", what, static_cast<int>(d.block));
}

void checkCodecType(const CodecDesc& d, cocclDataType_t dt, const char* what) {
  if (d.kind == CodecKind::None) {
    COCCL_CHECK_ARG(elemBytes(dt) != 0, "%s: unknown data type %d", what, static_cast<int>(dt));
    return;
  }
  COCCL_CHECK_ARG(isReduceType(dt), "%s: data type %d not supported (fp32, fp16, bf16)", what,
                  static_cast<int>(dt));
}

void checkPtr(const void* p, const char* name, const char* what) {
  COCCL_CHECK_ARG(p != nullptr, "%s: %s is null", what, name);
}

void checkInputCount(int p, int self, const char* what) {
  COCCL_CHECK_ARG(p >= 1 && p <= kMaxReduceInputs, "%s: p = %d (1 .. %d)", what, p,
                  kMaxReduceInputs);
  COCCL_CHECK_ARG(self >= -1 && self < p, "%s: self = %d with p = %d", what, self, p);
}

void checkInputs(const void* const* ins, int p, int self, const char* what) {
  checkInputCount(p, self, what);
  bool needIns = false;
  for (int r = 0; r < p; ++r) needIns = needIns || r != self;
  if (!needIns) return;
  COCCL_CHECK_ARG(ins != nullptr, "%s: ins is null", what);
  for (int r = 0; r < p; ++r)
    COCCL_CHECK_ARG(r == self || ins[r] != nullptr, "%s: ins[%d] is null", what, r);
}

// ---- None ----------------------------------------------------------------------------------

void noneCopy(const void* in, void* out, size_t bytes, cudaStream_t stream, const char* what) {
  if (bytes == 0 || in == out) return;
  checkCuda(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, stream), what);
}

void noneReduce(const void* const* ins, int p, int self, const void* selfIn, cocclDataType_t dt,
                size_t n, float scale, bool accumulate, void* out, void* decoded,
                cudaStream_t stream, const char* what) {
  COCCL_CHECK_ARG(isReduceType(dt), "%s: none: data type %d not supported (fp32, fp16, bf16)", what,
                  static_cast<int>(dt));
  NoneArgs a{};
  for (int r = 0; r < p; ++r) a.ins[r] = r == self ? nullptr : ins[r];
  a.p = p;
  a.self = self;
  a.selfIn = selfIn;
  a.n = n;
  a.scale = scale;
  a.out = out;
  a.decoded = decoded;
  const size_t warps = (n + 32 * kNoneElemsPerThread - 1) / (32 * kNoneElemsPerThread);
  dispatchTag(dt, [&](auto tag) {
    using Tag = decltype(tag);
    if (accumulate)
      launch<noneKernel<Tag, true>>(a, warps, stream, what);
    else
      launch<noneKernel<Tag, false>>(a, warps, stream, what);
  });
}

}  // namespace detail

size_t payloadBytes(const CodecDesc& d, cocclDataType_t dt, size_t count) {
  detail::checkDesc(d, "payloadBytes");
  detail::checkCodecType(d, dt, "payloadBytes");
  return static_cast<size_t>(
      codecGeometry(d, static_cast<int32_t>(detail::elemBytes(dt))).payloadBytes(count));
}

bool deviceAvailable() {
  static const bool available = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return n > 0;
  }();
  return available;
}

}  // namespace kernels
}  // namespace coccl
