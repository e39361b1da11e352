#include "comm/context.h"

namespace coccl {

CommContext::CommContext(const BootstrapHandle& handle, int rank, int nranks,
                         const CommConfig& cfg)
    : rank_(rank), nranks_(nranks), cfg_(cfg) {
  bootstrap_ = std::make_unique<Bootstrap>(handle, rank, nranks, cfg.timeoutMs);
  topo_ = gatherTopology(*bootstrap_);
}

void CommContext::fail(cocclResult_t code) {
  int expected = cocclSuccess;
  error_.compare_exchange_strong(expected, code);
  bootstrap_->abort();
}

}  // namespace coccl
