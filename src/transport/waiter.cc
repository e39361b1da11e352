#include <sched.h>
#include <unistd.h>

#include "core/error.h"
#include "transport/transport.h"

namespace coccl {

void Waiter::idle(const Deadline& d, const char* what) {
  if (abort_.load(std::memory_order_acquire))
    COCCL_THROW(cocclInvalidUsage, "communicator aborted while waiting for %s", what);
  auto now = Clock::now();
  if (now - lastPeerCheck_ > std::chrono::milliseconds(20)) {
    lastPeerCheck_ = now;
    bs_.checkPeers();
    if (d.expired())
      COCCL_THROW(cocclSystemError, "timed out after %lld ms waiting for %s (COCCL_TIMEOUT_MS)",
                  static_cast<long long>(timeoutMs_), what);
  }
  // Spin briefly, then give the core away: ranks as threads may outnumber cores.
  if (++spins_ < 64) return;
  spins_ = 0;
  sched_yield();
}

bool Waiter::poll() {
  if (abort_.load(std::memory_order_acquire))
    COCCL_THROW(cocclInvalidUsage, "communicator aborted");
  return t_.progress();
}

void Waiter::waitAll(std::vector<RequestPtr>& reqs, const char* what) {
  until(
      [&] {
        for (auto& r : reqs)
          if (r && !r->done()) return false;
        return true;
      },
      what);
}

}  // namespace coccl
