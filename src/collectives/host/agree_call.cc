#include "collectives/host/agree_call.h"

#include <string>

#include "collectives/host/host_executor.h"
#include "core/error.h"

namespace coccl {

CallAgreement::CallAgreement(HostExecutor& c, const CollRequest& r) : c_(c) {
  const size_t p = static_cast<size_t>(c.nranks());
  in_.assign(p, makeCallDesc(r));
  out_.assign(p, in_[0]);
}

void CallAgreement::start(const std::vector<uint32_t>& eagerTo) {
  const int p = c_.nranks(), me = c_.rank();
  if (p == 1) return;
  Transport& t = c_.transport();
  const uint64_t tag = HostExecutor::callDescTag();
  reqs_.reserve(2 * static_cast<size_t>(p - 1));
  for (int j = 0; j < p; ++j)
    if (j != me) reqs_.push_back(t.irecv(j, tag, &in_[static_cast<size_t>(j)], sizeof(CallDesc)));
  for (int d = 1; d < p; ++d) {
    const int j = (me + d) % p;
    CallDesc& o = out_[static_cast<size_t>(j)];
    o.eagerBytes = static_cast<size_t>(j) < eagerTo.size() ? eagerTo[static_cast<size_t>(j)] : 0;
    reqs_.push_back(t.isend(j, tag, &o, sizeof(CallDesc)));
  }
  c_.stats().wireBytesSent += sizeof(CallDesc) * static_cast<size_t>(p - 1);
}

void CallAgreement::finish(std::vector<RequestPtr>* mineEager) {
  const int p = c_.nranks(), me = c_.rank();
  if (p == 1) return;
  c_.waiter().waitAll(reqs_, "call agreement (are all ranks in this collective?)");
  in_[static_cast<size_t>(me)] = out_[static_cast<size_t>(me)];
  const std::string why = callDescMismatch(in_.data(), p);
  if (why.empty()) return;
  // Drain what the peers sent ahead (sizes from their descriptors, never above the cap), and
  // let this rank's own eager sends complete before their buffers go.
  std::vector<PoolBuffer> sink;
  std::vector<RequestPtr> drain;
  for (int j = 0; j < p; ++j) {
    const CallDesc& d = in_[static_cast<size_t>(j)];
    if (j == me || d.magic != kCallDescMagic || !d.eagerBytes || d.eagerBytes > kAgreeEagerBytes)
      continue;
    sink.push_back(c_.pool().get(d.eagerBytes));
    drain.push_back(
        c_.transport().irecv(j, HostExecutor::agreeEagerTag(), sink.back().data(), d.eagerBytes));
  }
  c_.waiter().waitAll(drain, "call agreement (dropping a disagreeing peer's data)");
  if (mineEager) c_.waiter().waitAll(*mineEager, "call agreement (this rank's data sent ahead)");
  COCCL_THROW(cocclInvalidUsage, "%s", why.c_str());
}

void agreeCall(HostExecutor& c, const CollRequest& r) {
  CallAgreement a(c, r);
  a.start();
  a.finish();
}

}  // namespace coccl
