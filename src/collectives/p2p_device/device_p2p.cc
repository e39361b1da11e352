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

// One staging buffer: free again once `done` (recorded after its last use) has completed.
struct Slot {
  void* ptr = nullptr;
  size_t bytes = 0;
  cudaEvent_t done = nullptr;
  bool busy = false;  // handed out to the call being issued
};

}  // namespace

struct DeviceP2P::Impl {
  int device, me, p;
  Bootstrap& bs;
  std::vector<uint64_t> sendSeq, recvSeq;
  std::vector<std::deque<P2PHeader>> awaiting;  // per peer: my Sender headers, oldest first
  std::deque<Slot> slots;                        // stable addresses
  std::string algo;

  Impl(int dev, int rank, int nranks, Bootstrap& b)
      : device(dev), me(rank), p(nranks), bs(b), sendSeq(static_cast<size_t>(nranks), 0),
        recvSeq(static_cast<size_t>(nranks), 0), awaiting(static_cast<size_t>(nranks)) {}
  ~Impl() {
    DeviceGuard g(device, DeviceGuard::kNoThrow);
    for (Slot& s : slots) {
      if (s.ptr) COCCL_CUDA_WARN(cudaFree(s.ptr));  // waits for the device's work
      if (s.done) COCCL_CUDA_WARN(cudaEventDestroy(s.done));
    }
  }

  // A free slot of at least `bytes`. Never frees (cudaFree would wait for all device work,
  // which may wait for a peer that waits for this rank): a too small free slot stays for
  // smaller requests and a new one is made. Rounded up to 64 KiB.
  Slot* get(size_t bytes) {
    bytes = (bytes + 65535) / 65536 * 65536;
    for (Slot& s : slots) {
      if (s.busy || s.bytes < bytes) continue;
      const cudaError_t q = cudaEventQuery(s.done);
      if (q == cudaSuccess) {
        s.busy = true;
        return &s;
      }
      if (q != cudaErrorNotReady) COCCL_CUDA_CHECK(q);
    }
    Slot s;
    s.bytes = bytes;
    COCCL_CUDA_CHECK(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
    if (cudaMalloc(&s.ptr, bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      (void)cudaEventDestroy(s.done);
      COCCL_THROW(cocclSystemError,
                  "compressed Send/Recv: cannot allocate %zu bytes of device staging", bytes);
    }
    s.busy = true;
    slots.push_back(s);
    return &slots.back();
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
  const std::string earlier = m.pollVerdicts();
  struct Op {
    P2PHeader mine, theirs;
    std::string mismatch;
    Slot* payload = nullptr;
    Slot* ws = nullptr;
  };
  std::vector<Op> ops(group.size());
  size_t control = 0;  // header and verdict bytes this rank sends
  for (size_t i = 0; i < group.size(); ++i) {
    const CollRequest& r = group[i];
    if (!r.codec) continue;
    COCCL_CHECK_USAGE(!streamCapturing(static_cast<cudaStream_t>(r.stream)),
                      "%s with codec %s on device buffers cannot be captured into a CUDA graph "
                      "(its staging is handed out per call); capture it uncompressed",
                      collName(r.coll), r.codec->name());
  }
  // Headers of the sends first (they never wait), then each receive waits for its sender's.
  for (size_t i = 0; i < group.size(); ++i) {
    const CollRequest& r = group[i];
    if (!r.codec || r.coll != Coll::Send) continue;
    const size_t q = static_cast<size_t>(r.peer());
    ops[i].mine = makeP2PHeader(P2PRole::Sender, m.sendSeq[q]++, r.count, r.dt, r.codec);
    m.bs.send(r.peer(), kHeaderTag, &ops[i].mine, sizeof(P2PHeader));
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
    o.mismatch = p2pMismatch(o.theirs, o.mine, r.peer(), m.me);
    m.bs.send(r.peer(), kVerdictTag, &o.mine, sizeof(P2PHeader));
    control += sizeof(P2PHeader);
  }
  // Every slot handed out is free again once its stream has passed the call's last use of it
  // (recorded after the decodes; on an error part-way, after what was enqueued).
  struct Release {
    const std::vector<CollRequest>& group;
    std::vector<Op>& ops;
    bool done = false;
    void operator()() {
      for (size_t i = 0; i < ops.size(); ++i)
        for (Slot* sl : {ops[i].payload, ops[i].ws}) {
          if (!sl) continue;
          const cudaError_t e =
              cudaEventRecord(sl->done, static_cast<cudaStream_t>(group[i].stream));
          sl->busy = false;
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
    }
    if (n == 0) continue;
    o.payload = m.get(n);
    const size_t wsBytes =
        o.mismatch.empty() ? r.codec->deviceWorkspaceBytes(r.count, r.dt, 1) : 0;
    if (wsBytes) o.ws = m.get(wsBytes);
    if (r.coll == Coll::Send)
      r.codec->deviceEncode(r.in, r.dt, r.count, o.payload->ptr, o.ws ? o.ws->ptr : nullptr, s);
    CollRequest b = r;
    b.codec = nullptr;
    b.dt = cocclUint8;
    b.count = n;
    if (r.coll == Coll::Send)
      b.in = o.payload->ptr;
    else
      b.out = o.payload->ptr;
    bytes.push_back(b);
  }
  CollStats moved;
  if (!bytes.empty()) move(bytes, moved);
  for (size_t i = 0; i < group.size(); ++i) {
    const CollRequest& r = group[i];
    Op& o = ops[i];
    if (o.payload && r.coll == Coll::Recv && o.mismatch.empty())
      r.codec->deviceDecode(o.payload->ptr, r.count, r.dt, r.out, o.ws ? o.ws->ptr : nullptr,
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
