// Compressed Send/Recv on device buffers (device_p2p.h).
#include "collectives/p2p_device/device_p2p.h"

#include <cuda_runtime.h>

#include <deque>
#include <string>

#include "codecs/codec.h"
#include "collectives/p2p_header.h"
#include "core/bootstrap.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "mem/cuda_check.h"

namespace coccl {
namespace {

// Bootstrap tags of the two messages of a compressed device Send/Recv (messages of one
// (peer, tag) match in order; the bootstrap is the communicator's own).
constexpr uint64_t kHeaderTag = 0x4450325048445231ull;   // "DP2PHDR1": sender -> receiver
constexpr uint64_t kVerdictTag = 0x4450325056524431ull;  // "DP2PVRD1": receiver -> sender
// The most a disagreeing sender's payload may be for the receiver to drain it (larger: the
// receiver does not post a receive; the sender's transfer then fails on its own timeout).
constexpr uint64_t kMaxDrainBytes = uint64_t{1} << 36;

}  // namespace

struct DeviceP2P::Impl {
  int device, me, p;
  Bootstrap& bs;
  std::vector<uint64_t> sendSeq, recvSeq;
  std::vector<std::deque<P2PHeader>> awaiting;  // per peer: my Sender headers, oldest first
  // Staging comes from a stream-ordered pool of our own (cudaMallocFromPoolAsync on the
  // call's stream, cudaFreeAsync after its last use): no cudaMalloc and no host wait on the
  // call path (a cudaMalloc there was seen to stall a rank while a peer's P2P kernel waited
  // for this one), and nothing is reused before the stream has passed its last use. The pool
  // keeps what it got (release threshold: never), so the steady state allocates nothing new.
  cudaMemPool_t pool = nullptr;
  std::string algo;

  Impl(int dev, int rank, int nranks, Bootstrap& b)
      : device(dev), me(rank), p(nranks), bs(b), sendSeq(static_cast<size_t>(nranks), 0),
        recvSeq(static_cast<size_t>(nranks), 0), awaiting(static_cast<size_t>(nranks)) {
    DeviceGuard g(device);
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    COCCL_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
    uint64_t keep = UINT64_MAX;
    COCCL_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  }
  // Outstanding allocations (frees still queued on a stream) keep the pool alive until done.
  ~Impl() {
    DeviceGuard g(device, DeviceGuard::kNoThrow);
    if (pool) COCCL_CUDA_WARN(cudaMemPoolDestroy(pool));
  }

  // `bytes` of staging, ordered on `s`.
  void* alloc(size_t bytes, cudaStream_t s) {
    void* ptr = nullptr;
    const cudaError_t e = cudaMallocFromPoolAsync(&ptr, bytes, pool, s);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      COCCL_THROW(cocclSystemError,
                  "compressed Send/Recv: cannot allocate %zu bytes of device staging: %s", bytes,
                  cudaGetErrorString(e));
    }
    return ptr;
  }

  // Reads the verdicts that arrived for this rank's earlier compressed Sends (no waiting);
  // the first disagreement's message, or "".
  std::string pollVerdicts() {
    std::string first;
    for (int q = 0; q < p; ++q) {
      auto& w = awaiting[static_cast<size_t>(q)];
      P2PHeader v;
      while (!w.empty() && bs.tryRecv(q, kVerdictTag, &v, sizeof(v))) {
        const std::string mm = p2pMismatch(w.front(), v, me, q);
        w.pop_front();
        if (first.empty() && !mm.empty()) first = mm;
      }
    }
    return first;
  }
};

DeviceP2P::DeviceP2P(int device, int rank, int nranks, Bootstrap& bootstrap)
    : impl_(std::make_unique<Impl>(device, rank, nranks, bootstrap)) {}
DeviceP2P::~DeviceP2P() = default;
bool DeviceP2P::built() { return true; }

void DeviceP2P::run(const std::vector<CollRequest>& group, const Move& move, CollStats& stats) {
  Impl& m = *impl_;
  DeviceGuard g(m.device);
  COCCL_INFO(kLogColl, "device Send/Recv group of %zu operations (codec path)", group.size());
  const std::string earlier = m.pollVerdicts();
  struct Op {
    P2PHeader mine, theirs;
    std::string mismatch;
    void* payload = nullptr;  // staging (payloadBytes of it), ordered on the op's stream
    size_t payloadBytes = 0;
    void* ws = nullptr;  // the codec's device workspace
  };
  std::vector<Op> ops(group.size());
  size_t control = 0;  // header and verdict bytes this rank sends
  for (size_t i = 0; i < group.size(); ++i) {
    const CollRequest& r = group[i];
    if (!r.codec) continue;
    COCCL_CHECK_USAGE(!streamCapturing(static_cast<cudaStream_t>(r.stream)),
                      "%s with codec %s on device buffers cannot be captured into a CUDA graph "
                      "(its sender and receiver agree on the host in each call); capture it "
                      "uncompressed",
                      collName(r.coll), r.codec->name());
  }
  // Every staging buffer is freed on its op's stream after the call's last use of it (after
  // the decodes; on an error part-way, after what was enqueued).
  struct Release {
    const std::vector<CollRequest>& group;
    std::vector<Op>& ops;
    bool done = false;
    void operator()() {
      for (size_t i = 0; i < ops.size(); ++i)
        for (void* ptr : {ops[i].payload, ops[i].ws}) {
          if (!ptr) continue;
          const cudaError_t e = cudaFreeAsync(ptr, static_cast<cudaStream_t>(group[i].stream));
          if (e != cudaSuccess) {
            (void)cudaGetLastError();
            if (done) COCCL_CUDA_CHECK(e);
          }
        }
      ops.clear();
    }
    ~Release() {
      if (!ops.empty()) (*this)();
    }
  } release{group, ops};
  // Staging first, before any header leaves this rank: a failure here (out of device memory)
  // then fails this rank alone, with no peer told to expect a payload.
  for (size_t i = 0; i < group.size(); ++i) {
    const CollRequest& r = group[i];
    if (!r.codec) continue;
    Op& o = ops[i];
    const auto s = static_cast<cudaStream_t>(r.stream);
    const size_t n = r.codec->encodedBytes(r.count, r.dt);
    if (n == 0) continue;
    o.payload = m.alloc(n, s);
    o.payloadBytes = n;
    if (const size_t ws = r.codec->deviceWorkspaceBytes(r.count, r.dt, 1)) o.ws = m.alloc(ws, s);
  }
  // Headers of the sends first (they never wait), then each receive waits for its sender's.
  for (size_t i = 0; i < group.size(); ++i) {
    const CollRequest& r = group[i];
    if (!r.codec || r.coll != Coll::Send) continue;
    const size_t q = static_cast<size_t>(r.peer());
    ops[i].mine = makeP2PHeader(P2PRole::Sender, m.sendSeq[q]++, r.count, r.dt, r.codec);
    m.bs.send(r.peer(), kHeaderTag, &ops[i].mine, sizeof(P2PHeader));
    COCCL_INFO(kLogColl, "compressed Send #%llu of %zu elements (%s) to rank %d: header sent",
               static_cast<unsigned long long>(m.sendSeq[q] - 1), r.count, r.codec->name(),
               r.peer());
    m.awaiting[q].push_back(ops[i].mine);
    control += sizeof(P2PHeader);
  }
  for (size_t i = 0; i < group.size(); ++i) {
    const CollRequest& r = group[i];
    if (!r.codec || r.coll != Coll::Recv) continue;
    Op& o = ops[i];
    o.mine = makeP2PHeader(P2PRole::Receiver, m.recvSeq[static_cast<size_t>(r.peer())]++,
                           r.count, r.dt, r.codec);
    try {
      m.bs.recv(r.peer(), kHeaderTag, &o.theirs, sizeof(P2PHeader));
    } catch (const Error& e) {
      COCCL_THROW(e.code() == cocclInvalidUsage ? cocclInvalidUsage : cocclSystemError,
                  "compressed Recv of %zu elements (%s) from rank %d: no header from the sender "
                  "(it must send through a codec too, COCCL_TIMEOUT_MS bounds the wait): %s",
                  r.count, r.codec->name(), r.peer(), e.what());
    }
    COCCL_INFO(kLogColl, "compressed Recv #%llu of %zu elements (%s) from rank %d: header in",
               static_cast<unsigned long long>(m.recvSeq[static_cast<size_t>(r.peer())] - 1),
               r.count, r.codec->name(), r.peer());
    o.mismatch = p2pMismatch(o.theirs, o.mine, r.peer(), m.me);
    m.bs.send(r.peer(), kVerdictTag, &o.mine, sizeof(P2PHeader));
    control += sizeof(P2PHeader);
  }
  // The byte group: encoded payloads into staging, the exact operations as they are.
  std::vector<CollRequest> bytes;
  bytes.reserve(group.size());
  for (size_t i = 0; i < group.size(); ++i) {
    const CollRequest& r = group[i];
    Op& o = ops[i];
    if (!r.codec) {
      bytes.push_back(r);
      continue;
    }
    auto s = static_cast<cudaStream_t>(r.stream);
    size_t n = o.mine.payloadBytes;
    if (r.coll == Coll::Recv && !o.mismatch.empty()) {
      if (!isP2PHeader(o.theirs, P2PRole::Sender) || o.theirs.payloadBytes > kMaxDrainBytes)
        continue;  // nothing a coccl sender would send: nothing to drain
      n = o.theirs.payloadBytes;
      if (n > o.payloadBytes) {  // the sender's larger payload: drain it into a larger buffer
        if (o.payload) COCCL_CUDA_CHECK(cudaFreeAsync(o.payload, s));
        o.payload = nullptr;  // freed: Release must not free it again if alloc throws
        o.payload = m.alloc(n, s);
        o.payloadBytes = n;
      }
    }
    if (n == 0) continue;
    if (r.coll == Coll::Send) r.codec->deviceEncode(r.in, r.dt, r.count, o.payload, o.ws, s);
    CollRequest b = r;
    b.codec = nullptr;
    b.dt = cocclUint8;
    b.count = n;
    if (r.coll == Coll::Send)
      b.in = o.payload;
    else
      b.out = o.payload;
    bytes.push_back(b);
  }
  CollStats moved;
  if (!bytes.empty()) move(bytes, moved);
  for (size_t i = 0; i < group.size(); ++i) {
    const CollRequest& r = group[i];
    Op& o = ops[i];
    if (o.payload && r.coll == Coll::Recv && o.mismatch.empty())
      r.codec->deviceDecode(o.payload, r.count, r.dt, r.out, o.ws,
                            static_cast<cudaStream_t>(r.stream));
  }
  std::string mismatch;  // the first disagreeing receive's message
  for (const Op& o : ops)
    if (mismatch.empty()) mismatch = o.mismatch;
  release.done = true;
  release();
  stats.wireBytesSent = moved.wireBytesSent + control;
  m.algo = std::string("p2p-codec/") + moved.algorithm;
  stats.algorithm = m.algo.c_str();
  if (!mismatch.empty()) COCCL_THROW(cocclInvalidUsage, "%s", mismatch.c_str());
  if (!earlier.empty())
    COCCL_THROW(cocclInvalidUsage, "an earlier compressed Send of this rank: %s",
                earlier.c_str());
}

}  // namespace coccl
