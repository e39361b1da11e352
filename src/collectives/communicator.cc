#include "collectives/communicator.h"

#include "core/error.h"
#include "core/log.h"

namespace coccl {
namespace {
constexpr uint64_t kSeqBits = 22;
constexpr uint64_t kSubBits = 24;
constexpr uint64_t kP2pSeqMask = (uint64_t{1} << (kSeqBits + kSubBits)) - 1;

uint64_t kindBits(TagKind k) { return static_cast<uint64_t>(k) << (kSeqBits + kSubBits); }
}  // namespace

Communicator::Communicator(const BootstrapHandle& handle, int rank, int nranks,
                           const CommConfig& cfg)
    : rank_(rank), nranks_(nranks), cfg_(cfg), policy_(cfg.policy) {
  bootstrap_ = std::make_unique<Bootstrap>(handle, rank, nranks, cfg.timeoutMs);
  topo_ = gatherTopology(*bootstrap_);
  transport_ = makeUcxTransport(*bootstrap_, topo_);
  waiter_ = std::make_unique<Waiter>(*transport_, *bootstrap_, abort_, cfg.timeoutMs);
  sendSeq_.assign(nranks, 0);
  recvSeq_.assign(nranks, 0);
  // Device path (CUDA builds): staging regions shared over CUDA IPC; collective, every rank.
  device_ = DeviceComm::create(*this);
  // Everyone's endpoints exist before anyone sends.
  bootstrap_->barrier();
  COCCL_INFO(kLogInit, "comm %s rank %d nranks %d: %d host(s), %d local rank(s), NUMA node %d",
             cfg.name.c_str(), rank, nranks, topo_.nodes, topo_.localRanks,
             topo_.ranks[rank].numaNode);
}

Communicator::~Communicator() {
  device_.reset();
  waiter_.reset();
  if (transport_) transport_->close();
  transport_.reset();
}

uint64_t Communicator::nextCollectiveTag() {
  uint64_t seq = collSeq_++ & ((uint64_t{1} << kSeqBits) - 1);
  return kindBits(TagKind::Collective) | (seq << kSubBits);
}

uint64_t Communicator::nextSendTag(int peer) {
  return kindBits(TagKind::P2P) | (sendSeq_[peer]++ & kP2pSeqMask);
}

uint64_t Communicator::nextRecvTag(int peer) {
  return kindBits(TagKind::P2P) | (recvSeq_[peer]++ & kP2pSeqMask);
}

void Communicator::fail(cocclResult_t code) {
  int expected = cocclSuccess;
  error_.compare_exchange_strong(expected, code);
  bootstrap_->abort();
}

cocclResult_t Communicator::asyncError() const {
  const int e = error_.load();
  if (e != cocclSuccess) return static_cast<cocclResult_t>(e);
  return device_ ? device_->asyncError() : cocclSuccess;
}

void Communicator::checkUsable() const {
  if (abort_.load(std::memory_order_acquire))
    COCCL_THROW(cocclInvalidUsage, "communicator was aborted");
  cocclResult_t e = asyncError();
  if (e != cocclSuccess)
    COCCL_THROW(cocclInvalidUsage,
                "communicator is broken by an earlier error (%s); destroy or abort it",
                resultString(e));
}

void Communicator::requestAbort() {
  abort_.store(true, std::memory_order_release);
  if (device_) device_->abort();
  bootstrap_->abort();
}

void Communicator::finalize() {
  checkUsable();
  if (device_) device_->quiesce();
  bootstrap_->barrier();
}

}  // namespace coccl
