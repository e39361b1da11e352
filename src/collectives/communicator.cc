#include "collectives/communicator.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "codecs/abi/registry.h"
#include "collectives/delta/delta_device.h"
#include "collectives/device_executors.h"
#include "collectives/host/delta_header.h"
#include "collectives/host/host_executor.h"
#include "collectives/layout.h"
#include "collectives/p2p_device/device_p2p.h"
#include "collectives/policy_init.h"
#include "core/agree.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"

namespace coccl {
namespace {

// The memory kind of a call's buffers (nullptrs ignored); host and device mixed is an error.
// A pointer equal to the one before it (an in-place call) is not queried again: each query is
// a driver call (cuPointerGetAttributes) on every collective's path.
MemKind kindOf(const char* what, std::initializer_list<const void*> ptrs) {
  bool dev = false, host = false;
  const void* prev = nullptr;
  for (const void* p : ptrs) {
    if (!p || p == prev) continue;
    prev = p;
    (memKind(p) == MemKind::Device ? dev : host) = true;
  }
  COCCL_CHECK_ARG(!(dev && host), "%s: buffers are partly host and partly device memory; use one kind",
                  what);
  return dev ? MemKind::Device : MemKind::Host;
}

// The buffers of `r` that this rank touches.
MemKind kindOf(const CollRequest& r, int me) {
  const char* what = collName(r.coll);
  switch (r.coll) {
    case Coll::Broadcast: return kindOf(what, {me == r.root ? r.in : nullptr, r.out});
    case Coll::Reduce: return kindOf(what, {r.in, me == r.root ? r.out : nullptr});
    case Coll::Send: return kindOf(what, {r.in});
    case Coll::Recv: return kindOf(what, {r.out});
    default: return kindOf(what, {r.in, r.out});
  }
}

// Every rank must have loaded the same codec plug-ins (COCCL_CODEC_PLUGIN) before any spec is
// parsed: a load failure on any rank, or different codecs or format versions, fail init on
// every rank with the same message.
void agreeOnCodecs(CommContext& ctx) {
  const std::string failure = loadEnvCodecPlugins();
  std::string why = agree(ctx.bootstrap(), failure);
  if (!why.empty()) COCCL_THROW(cocclInvalidArgument, "codec plug-ins: %s", why.c_str());
  // Every rank's list of "name@formatVersion" (cut to 500 characters), so that every rank
  // names the same difference.
  constexpr size_t kSig = 512;
  const std::string sig = registeredCodecsSignature();
  const int p = ctx.nranks(), me = ctx.rank();
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the whole list: a difference past the cut
  for (unsigned char ch : sig) h = (h ^ ch) * 1099511628211ull;
  std::vector<char> all(kSig * static_cast<size_t>(p), '\0');
  char* mine = all.data() + kSig * static_cast<size_t>(me);
  std::memcpy(mine, sig.data(), std::min(sig.size(), kSig - 16));
  std::memcpy(mine + kSig - 8, &h, 8);
  ctx.bootstrap().allGather(all.data(), kSig);
  auto at = [&](int r) { return std::string(all.data() + kSig * static_cast<size_t>(r)); };
  for (int r = 1; r < p; ++r)
    if (std::memcmp(all.data(), all.data() + kSig * static_cast<size_t>(r), kSig) != 0)
      COCCL_THROW(cocclInvalidArgument,
                  "codec plug-ins: the ranks registered different codecs (COCCL_CODEC_PLUGIN "
                  "must load the same plug-ins everywhere): rank 0 has %s; rank %d has %s",
                  at(0).c_str(), r, at(r).c_str());
}

// The algorithm choice (COCCL_ALGO, COCCL_RING_MIN_RANKS), the chunks of the pipelined
// collectives (COCCL_CHUNK_BYTES) and the nodes of the two-level ones (COCCL_RANKS_PER_NODE, as
// resolved) decide which messages every rank expects: ranks that differ would wait for each
// other until the timeout, or pair messages of different pieces.
void agreeOnAlgorithm(CommContext& ctx) {
  const std::string& a = ctx.config().algo;
  // "direct" is two-shot's other name: the same code.
  const uint64_t code = a == "auto" ? 0 : a == "ring" ? 2 : a == "one-shot" ? 3 : 1;
  const uint64_t ringMin = static_cast<uint64_t>(ctx.config().ringMinRanks);
  const std::string why = agreeValues(
      ctx.bootstrap(),
      {{"COCCL_ALGO (0 auto, 1 two-shot, 2 ring, 3 one-shot)", code},
       {"COCCL_RING_MIN_RANKS", ringMin},
       {"COCCL_CHUNK_BYTES", static_cast<uint64_t>(ctx.config().chunkBytes)},
       {"COCCL_RANKS_PER_NODE (as resolved)", static_cast<uint64_t>(ctx.ranksPerNode())}});
  if (!why.empty()) COCCL_THROW(cocclInvalidUsage, "algorithm: %s", why.c_str());
}

// The plug-ins first (the policy's specs may name theirs), then the policy.
CodecPolicy initPolicy(CommContext& ctx) {
  agreeOnCodecs(ctx);
  agreeOnAlgorithm(ctx);
  return resolvePolicy(ctx);
}

}  // namespace

Communicator::Communicator(const BootstrapHandle& handle, int rank, int nranks,
                           const CommConfig& cfg)
    : ctx_(handle, rank, nranks, cfg), policy_(initPolicy(ctx_)) {
  auto host = std::make_unique<HostExecutor>(ctx_);
  host_ = host.get();
  executors_.push_back(std::move(host));
  DeviceExecutors dev = probeDeviceExecutors(ctx_, policy_.asksForNcclExact());
  deviceOff_ = dev.list.empty() ? dev.reason : "";
  for (auto& x : dev.list) executors_.push_back(std::move(x));
  // Everyone's endpoints exist before anyone sends.
  ctx_.bootstrap().barrier();
  const CommTopology& topo = ctx_.topology();
  COCCL_INFO(kLogInit, "comm %s rank %d nranks %d: %d host(s), %d local rank(s), NUMA node %d",
             cfg.name.c_str(), rank, nranks, topo.nodes, topo.localRanks,
             topo.ranks[rank].numaNode);
}

Communicator::~Communicator() {
  for (int c = 0; c < kCollKinds; ++c) {
    const CollTotals& t = totals_[c];
    const Coll coll = static_cast<Coll>(c);
    if (t.calls)
      COCCL_INFO(kLogColl,
                 "comm %s rank %d: %s %llu calls, %llu compressed%s%s, %.3g MB in, %.3g MB sent",
                 config().name.c_str(), rank(),
                 coll == Coll::Send ? "Send/Recv groups" : collName(coll),
                 static_cast<unsigned long long>(t.calls),
                 static_cast<unsigned long long>(t.compressed), t.codec.empty() ? "" : " with ",
                 t.codec.c_str(), t.logicalBytes / 1e6, t.wireBytes / 1e6);
  }
  // A broken or aborted communicator stops its executors before any of them waits for its
  // device work in its destructor (a call stuck on a dead peer would hold that wait forever).
  const bool healthy = !ctx_.aborted() && asyncError() == cocclSuccess && !ctx_.bootstrap().aborted();
  // Reverse order, as in requestAbort (CUDA IPC releases its peers before NCCL's abort).
  if (!healthy && !ctx_.aborted())
    for (auto it = executors_.rbegin(); it != executors_.rend(); ++it) (*it)->abort();
  while (!executors_.empty()) executors_.pop_back();  // reverse order
  deltaDevice_.reset();  // cudaFree waits for this device's kernels
  deviceP2P_.reset();
}

int Communicator::cudaDevice() const {
  for (const auto& x : executors_)
    if (x->cudaDevice() >= 0) return x->cudaDevice();
  return -1;
}

Executor& Communicator::route(CollRequest& r) {
  // A codec without device launchers (a plug-in built without them) is refused on device
  // buffers instead of silently running exact (include/coccl_codec.h, COCCL_CODEC_CAP_DEVICE).
  for (const Codec* c : {r.codec, r.interCodec})  // a two-level entry: both of its codecs
    if (c && r.mem == MemKind::Device && !c->hasDeviceOps())
      COCCL_THROW(cocclInvalidUsage,
                  "%s with codec %s on device buffers: the codec has no device launchers "
                  "(COCCL_CODEC_CAP_DEVICE); use host buffers or another codec",
                  collName(r.coll), c->name());
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& x : executors_)
      if (x->supports(r)) return *x;
    if (!r.codec) break;
    // No executor runs it compressed (a codec without a device implementation, or more ranks
    // than an executor's codec kernels take): exact, said once.
    if (!saidFallback_.exchange(true))
      COCCL_WARN("%s with codec %s on %s buffers: no executor runs it compressed; running it "
                 "exact (said once per communicator)",
                 collName(r.coll), r.codec->name(), r.mem == MemKind::Device ? "device" : "host");
    r.codec = nullptr;
    r.interCodec = nullptr;
  }
  COCCL_THROW(cocclInvalidUsage, "%s: device buffers, but the device path is off: %s",
              collName(r.coll), deviceOff_.empty() ? "no executor takes this call" : deviceOff_.c_str());
}

Executor& Communicator::routeGroup(const std::vector<CollRequest>& group) {
  // The first executor that takes every operation of the group (what it takes depends only on
  // the memory kind, which is the same for the whole group, so every rank decides alike).
  for (auto& x : executors_) {
    bool all = true;
    for (const CollRequest& o : group) all = all && x->supports(o);
    if (all) return *x;
  }
  COCCL_THROW(cocclInvalidUsage, "Send/Recv: device buffers, but the device path is off: %s",
              deviceOff_.empty() ? "no executor takes this group" : deviceOff_.c_str());
}

// The router's part of the statistics; the executor adds algorithm and wire bytes.
void Communicator::beginStats(size_t logicalBytes, const Codec* codec) {
  stats_ = CollStats{};
  stats_.logicalBytes = logicalBytes;
  stats_.codec = codec ? codec->name() : "none";
}

void Communicator::run(CollRequest r) {
  const size_t bytes = logicalBytes(r, nranks());
  CodecPolicy::Choice choice;
  if (r.coll == Coll::AllReduce || r.coll == Coll::ReduceScatter || r.coll == Coll::AllGather)
    choice = policy_.choose(r.coll, r.dt, r.op, bytes, r.count, r.codec, r.seq);
  r.codec = choice.codec;
  r.interCodec = choice.inter;
  r.exact = choice.exact;
  r.mem = kindOf(r, rank());
  Executor& x = route(r);
  beginStats(bytes, r.codec);
  if (r.interCodec) stats_.codec = choice.name;
  x.run(r, stats_);
  totals_[static_cast<int>(r.coll)].add(stats_);
}

void Communicator::runAllGatherDelta(CollRequest r, unsigned flags) {
  r.coll = Coll::AllGather;
  const int p = nranks();
  const size_t bytes = logicalBytes(r, p);
  const bool reset = (flags & COCCL_DELTA_RESET) != 0;
  // A codec passed for the call that refuses the count enters the header as it is, so that
  // the ranks still compare it (one rank refusing alone would leave the others waiting for its
  // header); once they agree, a reset call runs exact (it is a plain AllGather) and any other
  // fails with the refusal on every rank.
  const bool refused = CodecPolicy::forcedRefuses(r.codec, Coll::AllGather, r.dt, r.op, r.count);
  if (!refused)
    r.codec = policy_.select(Coll::AllGather, r.dt, r.op, bytes, r.count, r.codec, r.seq);
  r.interCodec = nullptr;
  r.mem = kindOf(r, rank());
  const bool device = r.mem == MemKind::Device;
  const bool delta = r.codec && !reset && !refused;
  // What this rank sends each peer: the chunks' payloads, or the shard's bytes.
  uint64_t payload = r.count * dtypeSize(r.dt);
  if (delta) {
    const size_t chunk = chunkElems(static_cast<size_t>(config().chunkBytes), dtypeSize(r.dt),
                                    r.codec->blockElems());
    payload = 0;
    for (size_t k = 0, K = numChunks(r.count, chunk); k < K; ++k)
      payload += r.codec->encodedBytes(chunkOf(Range{0, r.count}, chunk, k).count, cocclFloat32);
  }
  // Every rank holds every header before anything else happens: the checks below then fail
  // alike on every rank (their inputs are agreed).
  const std::vector<DeltaHeader> all = host_->exchangeDeltaHeaders(
      makeDeltaHeader(flags, r.count, r.dt, device, r.codec, delta, payload));
  const std::string why = deltaMismatch(all);
  if (!why.empty()) COCCL_THROW(cocclInvalidUsage, "%s", why.c_str());
  if (refused && !reset)
    COCCL_THROW(cocclInvalidArgument, "%s", countRefusal(*r.codec, r.count, r.dt).c_str());
  const size_t headerBytes = static_cast<size_t>(p - 1) * kDeltaHeaderBytes;
  if (!delta) {
    r.codec = nullptr;
    Executor& x = route(r);
    beginStats(bytes, nullptr);
    x.run(r, stats_);
    stats_.wireBytesSent += headerBytes;
    totals_[static_cast<int>(Coll::AllGather)].add(stats_);
    return;
  }
  beginStats(bytes, r.codec);
  if (!device) {
    host_->runAllGatherDelta(r, stats_);
  } else {
    COCCL_CHECK_USAGE(r.codec->hasDeviceOps(),
                      "AllGatherDelta with codec %s on device buffers: the codec has no device "
                      "launchers (COCCL_CODEC_CAP_DEVICE); use host buffers or another codec",
                      r.codec->name());
    COCCL_CHECK_USAGE(DeltaDevice::built() && cudaDevice() >= 0,
                      "AllGatherDelta: device buffers, but the device path is off: %s",
                      deviceOff_.empty() ? "no device executor" : deviceOff_.c_str());
    if (!deltaDevice_) deltaDevice_ = std::make_unique<DeltaDevice>(cudaDevice());
    stats_.wireBytesSent = 0;
    deltaDevice_->run(r, p, rank(), static_cast<size_t>(config().chunkBytes),
                      [this](CollRequest& g, CollStats& st) {
                        Executor& x = route(g);
                        x.run(g, st);
                      },
                      stats_);
  }
  stats_.wireBytesSent += headerBytes;
  totals_[static_cast<int>(Coll::AllGather)].add(stats_);  // the destroy line's AllGather row
}

namespace {
// The message's direction as both ends see it: from the sender's rank to the receiver's.
P2PDir p2pDirection(bool send, int self, int peer) {
  const int from = send ? self : peer, to = send ? peer : self;
  return to > from ? P2PDir::Up : P2PDir::Down;
}
}  // namespace

void Communicator::runP2P(std::vector<CollRequest> group) {
  // count == 0 is a no-op at both ends (no header, nothing on the wire), as for collectives.
  group.erase(std::remove_if(group.begin(), group.end(),
                             [](const CollRequest& o) { return o.count == 0; }),
              group.end());
  bool dev = false, host = false;
  size_t sent = 0;
  const Codec* shown = nullptr;  // the statistics' codec: the first compressed operation's
  if (p2pSent_.empty()) p2pSent_.assign(static_cast<size_t>(nranks()), 0);
  if (p2pRecvd_.empty()) p2pRecvd_.assign(static_cast<size_t>(nranks()), 0);
  for (CollRequest& o : group) {
    // The message's number between its pair in its direction (a rule's "warmup_calls"): both
    // ends count the messages of the pair alike.
    const uint64_t msgNo = (o.coll == Coll::Send ? p2pSent_ : p2pRecvd_)[static_cast<size_t>(o.peer())]++;
    // Both ends of a message ask the same SENDRECV entry with the same count and type, so they
    // decide alike; where they do not (per-call codecs, other settings) the host executor's
    // header check fails both.
    if (CodecPolicy::forcedRefuses(o.codec, o.coll, o.dt, o.op, o.count))
      o.refused = true;  // kept: the header check fails both ends (request.h)
    else
      o.codec = policy_.select(o.coll, o.dt, o.op, logicalBytes(o, nranks()), o.count, o.codec,
                               msgNo, p2pDirection(o.coll == Coll::Send, rank(), o.peer()));
    o.interCodec = nullptr;
    if (o.coll == Coll::Send) sent += logicalBytes(o, nranks());
    if (!o.count || !o.p2pBuffer()) continue;
    o.mem = memKind(o.p2pBuffer());
    (o.mem == MemKind::Device ? dev : host) = true;
  }
  COCCL_CHECK_ARG(!(dev && host),
                  "send/receive: a group mixes host and device buffers on one communicator");
  const MemKind mem = dev ? MemKind::Device : MemKind::Host;
  for (CollRequest& o : group) {
    o.mem = mem;
    // Device paths check the count at this end only (before any header), as before.
    if (o.refused && mem == MemKind::Device)
      COCCL_THROW(cocclInvalidArgument, "%s", countRefusal(*o.codec, o.count, o.dt).c_str());
    // A codec without device launchers runs exact on device buffers; both ends drop it alike
    // (each end's buffers are device memory), so the message still matches.
    if (o.codec && mem == MemKind::Device && !o.codec->hasDeviceOps()) {
      if (!saidFallback_.exchange(true))
        COCCL_WARN("%s with codec %s on device buffers: the codec has no device launchers; "
                   "running it exact (said once per communicator)",
                   collName(o.coll), o.codec->name());
      o.codec = nullptr;
    }
    if (o.codec && !shown) shown = o.codec;
  }
  if (group.empty()) return;
  beginStats(sent, shown);
  if (mem == MemKind::Device && shown) {
    // Compressed on device buffers: encode / exact byte group / decode (p2p_device/).
    COCCL_CHECK_USAGE(DeviceP2P::built() && cudaDevice() >= 0,
                      "%s with codec %s on device buffers, but the device path is off: %s",
                      collName(group[0].coll), shown->name(),
                      deviceOff_.empty() ? "no device executor" : deviceOff_.c_str());
    if (!deviceP2P_)
      deviceP2P_ = std::make_unique<DeviceP2P>(cudaDevice(), rank(), nranks(), ctx_.bootstrap());
    deviceP2P_->run(group,
                    [this](const std::vector<CollRequest>& bytes, CollStats& st) {
                      routeGroup(bytes).runP2P(bytes, st);
                    },
                    stats_);
  } else {
    routeGroup(group).runP2P(group, stats_);
  }
  totals_[static_cast<int>(Coll::Send)].add(stats_);
}

cocclResult_t Communicator::asyncError() const {
  const cocclResult_t e = ctx_.hostError();
  if (e != cocclSuccess) return e;
  for (const auto& x : executors_) {
    const cocclResult_t r = x->asyncError();
    if (r != cocclSuccess) return r;
  }
  return cocclSuccess;
}

void Communicator::pollPeers() {
  using namespace std::chrono;
  const int64_t now =
      duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
  int64_t last = lastPeerPollMs_.load(std::memory_order_relaxed);
  if (now - last < 10 ||
      !lastPeerPollMs_.compare_exchange_strong(last, now, std::memory_order_relaxed))
    return;
  ctx_.bootstrap().checkPeers();
}

void Communicator::checkUsable() const {
  if (ctx_.aborted()) COCCL_THROW(cocclInvalidUsage, "communicator was aborted");
  cocclResult_t e = asyncError();
  if (e == cocclSuccess) return;
  std::string why = ctx_.hostErrorMessage();  // "" unless a host operation failed
  for (const auto& x : executors_)
    if (why.empty()) why = x->asyncErrorMessage();
  COCCL_THROW(cocclInvalidUsage,
              "communicator is broken by an earlier error (%s%s%s); destroy or abort it",
              resultString(e), why.empty() ? "" : ": ", why.c_str());
}

void Communicator::requestAbort() {
  ctx_.setAborted();
  // Reverse order: CUDA IPC releases its peers (poisoned flags) before NCCL's abort, which may
  // wait for work queued behind this rank's kernels.
  for (auto it = executors_.rbegin(); it != executors_.rend(); ++it) (*it)->abort();
  ctx_.bootstrap().abort();
}

bool Communicator::phaseTimes(std::vector<uint64_t>* words) const {
  for (const auto& x : executors_)
    if (x->phaseTimes(words)) return true;
  return false;
}

void Communicator::finalize() {
  checkUsable();
  for (auto& x : executors_) x->quiesce();
  ctx_.bootstrap().barrier();
}

}  // namespace coccl
