// Per-call agreement of the device collectives that need it (staged/call_check.h).
#include "collectives/staged/call_check.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "collectives/call_desc.h"
#include "collectives/staged/call_check_kernels.h"
#include "collectives/staged/staged_codec.h"
#include "core/error.h"
#include "mem/cuda_check.h"

namespace coccl {

namespace {

// Device scratch of the check, in slots of one call's descriptors (this rank's 16 words, then
// nranks x 16 gathered), allocated in slabs and never freed before the communicator. Shared
// (shared_ptr) with the user objects of captured graphs, which give their slot back when the
// graph is destroyed; the slabs themselves are freed by ~Impl.
struct SlotPool {
  std::mutex mu;
  size_t slotWords = 0;
  std::vector<uint64_t*> freeSlots;
  std::vector<void*> slabs;
  static constexpr size_t kSlotsPerSlab = 16;

  // A free slot; allocates a slab when there is none (capture mode relaxed around cudaMalloc,
  // which a capture in global mode would otherwise refuse). The lock is not held across the
  // allocation: releaseGraphSlot, on CUDA's callback thread, takes it. Throws Error.
  uint64_t* take() {
    {
      std::lock_guard<std::mutex> g(mu);
      if (!freeSlots.empty()) {
        uint64_t* s = freeSlots.back();
        freeSlots.pop_back();
        return s;
      }
    }
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    COCCL_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    void* d = nullptr;
    const cudaError_t e = cudaMalloc(&d, kSlotsPerSlab * slotWords * 8);
    COCCL_CUDA_WARN(cudaThreadExchangeStreamCaptureMode(&mode));
    COCCL_CUDA_CHECK(e);
    std::lock_guard<std::mutex> g(mu);
    slabs.push_back(d);
    for (size_t i = 1; i < kSlotsPerSlab; ++i)
      freeSlots.push_back(static_cast<uint64_t*>(d) + i * slotWords);
    return static_cast<uint64_t*>(d);
  }
  void give(uint64_t* s) {
    std::lock_guard<std::mutex> g(mu);
    freeSlots.push_back(s);
  }
};

// What a captured graph's user object holds: its slot, given back when the graph goes.
struct GraphSlot {
  std::shared_ptr<SlotPool> pool;
  uint64_t* slot;
};
void CUDART_CB releaseGraphSlot(void* p) {  // no CUDA calls in here (a user object destructor)
  auto* g = static_cast<GraphSlot*>(p);
  g->pool->give(g->slot);
  delete g;
}

}  // namespace

struct DeviceCallCheck::Impl {
  int p = 0, me = 0;
  std::shared_ptr<SlotPool> pool = std::make_shared<SlotPool>();
  std::mutex mu;
  std::unordered_map<unsigned long long, uint64_t*> byStream;  // cudaStreamGetId -> slot
  uint32_t* devFirst = nullptr;    // device word: 0 until the first difference
  CheckHostState* host = nullptr;  // mapped: host pointer
  CheckHostState* hostDev = nullptr;
  uint64_t* descs = nullptr;  // mapped: p x 16 words, host pointer
  uint64_t* descsDev = nullptr;

  // The slot of a call on `stream`: the stream's own (calls of one stream are ordered, so
  // they may share one); a fresh one, kept alive by the graph, for a call being captured
  // (launches of the graph may overlap anything else; the executions of one graph share it,
  // so one of them at a time: staged/call_check.h).
  uint64_t* slotFor(cudaStream_t stream) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaGraph_t graph = nullptr;
    COCCL_CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &st, nullptr, &graph));
    if (st == cudaStreamCaptureStatusActive) {
      uint64_t* s = pool->take();
      auto* g = new GraphSlot{pool, s};
      cudaUserObject_t obj = nullptr;
      cudaError_t e =
          cudaUserObjectCreate(&obj, g, releaseGraphSlot, 1, cudaUserObjectNoDestructorSync);
      if (e != cudaSuccess) {
        delete g;
        pool->give(s);
        COCCL_CUDA_CHECK(e);
      }
      // The graph takes the reference: the slot lives as long as the graph and its execs.
      e = cudaGraphRetainUserObject(graph, obj, 1, cudaGraphUserObjectMove);
      if (e != cudaSuccess) {
        COCCL_CUDA_WARN(cudaUserObjectRelease(obj, 1));  // gives the slot back
        COCCL_CUDA_CHECK(e);
      }
      return s;
    }
    COCCL_CHECK_USAGE(st == cudaStreamCaptureStatusNone,
                      "the stream's capture was invalidated (cudaStreamCaptureStatusInvalidated)");
    unsigned long long id = 0;
    COCCL_CUDA_CHECK(cudaStreamGetId(stream, &id));
    std::lock_guard<std::mutex> g(mu);
    auto it = byStream.find(id);
    if (it != byStream.end()) return it->second;
    uint64_t* s = pool->take();
    byStream.emplace(id, s);
    return s;
  }

  ~Impl() {
    for (void* d : pool->slabs) COCCL_CUDA_WARN(cudaFree(d));
    pool->slabs.clear();
    if (devFirst) COCCL_CUDA_WARN(cudaFree(devFirst));
    if (host) COCCL_CUDA_WARN(cudaFreeHost(host));
    if (descs) COCCL_CUDA_WARN(cudaFreeHost(descs));
  }
};

DeviceCallCheck::DeviceCallCheck(int nranks, int rank) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.p = nranks;
  m.me = rank;
  m.pool->slotWords = 16 * (static_cast<size_t>(nranks) + 1);
  void* d = nullptr;
  COCCL_CUDA_CHECK(cudaMalloc(&d, 8));
  m.devFirst = static_cast<uint32_t*>(d);
  // On a stream of its own: a device-wide synchronisation here could wait on other
  // communicators' kernels that wait on peers still in init.
  cudaStream_t s = nullptr;
  COCCL_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const cudaError_t ms = cudaMemsetAsync(d, 0, 8, s);
  const cudaError_t ss = ms == cudaSuccess ? cudaStreamSynchronize(s) : ms;
  COCCL_CUDA_WARN(cudaStreamDestroy(s));
  COCCL_CUDA_CHECK(ss);
  void* h = nullptr;
  COCCL_CUDA_CHECK(cudaHostAlloc(&h, sizeof(CheckHostState), cudaHostAllocMapped));
  m.host = static_cast<CheckHostState*>(h);
  std::memset(h, 0, sizeof(CheckHostState));
  COCCL_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&m.hostDev), h, 0));
  void* hd = nullptr;
  COCCL_CUDA_CHECK(cudaHostAlloc(&hd, static_cast<size_t>(nranks) * 128, cudaHostAllocMapped));
  m.descs = static_cast<uint64_t*>(hd);
  COCCL_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&m.descsDev), hd, 0));
}

DeviceCallCheck::~DeviceCallCheck() = default;

DeviceCallCheck::Carried DeviceCallCheck::carry(const CallDesc& d, const DescHeads* heads,
                                                cudaStream_t stream) {
  static_assert(sizeof(CallDesc) == sizeof(DescWords), "descriptor sizes");
  Impl& m = *impl_;
  DescWords w;
  std::memcpy(&w, &d, sizeof(w));
  Carried c;
  c.slot = m.slotFor(stream);
  if (heads) c.heads = *heads;
  launchStoreDesc(w, c.slot, static_cast<uint64_t*>(c.from(m.me)), c.heads.send, c.heads.sendStride,
                  m.p, m.me, stream);
  return c;
}

void DeviceCallCheck::compare(const CallDesc& d, const Carried& c, cudaStream_t stream) {
  Impl& m = *impl_;
  DescWords w;
  std::memcpy(&w, &d, sizeof(w));
  const bool headed = c.heads.recv != nullptr;
  const char* base = headed ? c.heads.recv : static_cast<const char*>(c.from(0));
  const size_t stride = headed ? c.heads.recvStride : sizeof(CallDesc);
  launchCompareDescs(w, base, stride, static_cast<const uint64_t*>(c.from(m.me)), m.me, m.p,
                     m.devFirst, m.hostDev, m.descsDev, stream);
}

void DeviceCallCheck::check(const CallDesc& d, ByteMover& mover, cudaStream_t stream) {
  const Carried c = carry(d, nullptr, stream);
  if (mover.hasAllGather()) {
    mover.allGather(c.mine(), c.from(0), sizeof(CallDesc), stream);
  } else {  // 128 bytes to and from every peer, one grouped exchange
    std::vector<ByteMover::Xfer> x;
    for (int q = 0; q < impl_->p; ++q) {
      if (q == impl_->me) continue;
      x.push_back({c.mine(), sizeof(CallDesc), q, true});
      x.push_back({c.from(q), sizeof(CallDesc), q, false});
    }
    mover.exchange(x, nullptr, stream);
  }
  compare(d, c, stream);
}

cocclResult_t DeviceCallCheck::error() const {
  return impl_->host->error ? cocclInvalidUsage : cocclSuccess;
}

std::string DeviceCallCheck::message() const {
  const Impl& m = *impl_;
  if (!m.host->error) return "";
  std::atomic_thread_fence(std::memory_order_acquire);  // the descriptors after the flag
  std::vector<CallDesc> all(static_cast<size_t>(m.p));
  for (int r = 0; r < m.p; ++r) all[static_cast<size_t>(r)] = callDescFromBytes(m.descs + 16 * r);
  return callDescMismatch(all.data(), m.p);
}

}  // namespace coccl
