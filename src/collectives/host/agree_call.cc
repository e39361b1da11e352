// The host collectives' per-call agreement (protocol in collectives/call_desc.h): an
// all-to-all of 128-byte descriptors on the descriptor tag, then the same comparison on every
// rank. One small message to and from every peer, all in flight at once: one one-way latency
// per call (perf/RESULTS.md "Agreement" has the measured cost).
#include <vector>

#include "collectives/call_desc.h"
#include "collectives/host/algorithms.h"
#include "collectives/host/host_executor.h"
#include "core/error.h"

namespace coccl {

void agreeCall(HostExecutor& c, const CollRequest& r) {
  const int p = c.nranks(), me = c.rank();
  std::vector<CallDesc> all(static_cast<size_t>(p));
  all[static_cast<size_t>(me)] = makeCallDesc(r);
  if (p == 1) return;
  Transport& t = c.transport();
  const uint64_t tag = HostExecutor::callDescTag();
  std::vector<RequestPtr> reqs;
  reqs.reserve(2 * static_cast<size_t>(p - 1));
  for (int j = 0; j < p; ++j)
    if (j != me) reqs.push_back(t.irecv(j, tag, &all[static_cast<size_t>(j)], sizeof(CallDesc)));
  for (int d = 1; d < p; ++d) {
    const int j = (me + d) % p;
    reqs.push_back(t.isend(j, tag, &all[static_cast<size_t>(me)], sizeof(CallDesc)));
  }
  c.stats().wireBytesSent += sizeof(CallDesc) * static_cast<size_t>(p - 1);
  c.waiter().waitAll(reqs, "call agreement (are all ranks in this collective?)");
  const std::string why = callDescMismatch(all.data(), p);
  if (!why.empty()) COCCL_THROW(cocclInvalidUsage, "%s", why.c_str());
}

}  // namespace coccl
