#include "comm/context.h"

#include "core/error.h"

namespace coccl {

CommContext::CommContext(const BootstrapHandle& handle, int rank, int nranks,
                         const CommConfig& cfg)
    : rank_(rank), nranks_(nranks), cfg_(cfg) {
  bootstrap_ = std::make_unique<Bootstrap>(handle, rank, nranks, cfg.timeoutMs);
  topo_ = gatherTopology(*bootstrap_);
  ranksPerNode_ = resolveRanksPerNode();
}

int CommContext::resolveRanksPerNode() const {
  const int p = nranks_;
  if (cfg_.ranksPerNode > 0) {
    COCCL_CHECK_ARG(cfg_.ranksPerNode <= p && p % cfg_.ranksPerNode == 0,
                    "COCCL_RANKS_PER_NODE=%lld does not divide the world size %d",
                    static_cast<long long>(cfg_.ranksPerNode), p);
    return static_cast<int>(cfg_.ranksPerNode);
  }
  // Hosts of equal size with consecutive ranks: L = ranks on rank 0's host.
  int L = 0;
  while (L < p && topo_.sameHost(0, L)) ++L;
  if (p % L != 0) return p;
  for (int r = 0; r < p; ++r)
    if (!topo_.sameHost(r, (r / L) * L)) return p;
  for (int a = 0; a < p / L; ++a)
    for (int b = a + 1; b < p / L; ++b)
      if (topo_.sameHost(a * L, b * L)) return p;
  return L;
}

void CommContext::fail(cocclResult_t code, const std::string& what) {
  int expected = cocclSuccess;
  if (error_.compare_exchange_strong(expected, code)) {
    std::lock_guard<std::mutex> lock(errorMu_);
    errorMessage_ = what;
  }
  bootstrap_->abort(code);
}

std::string CommContext::hostErrorMessage() const {
  std::lock_guard<std::mutex> lock(errorMu_);
  return errorMessage_;
}

}  // namespace coccl
