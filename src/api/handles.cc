// The live communicator handles of the process. A handle is registered when cocclCommInitRank
// creates it and unregistered by the cocclCommDestroy / cocclCommAbort that frees it, so a
// call on a destroyed or aborted handle (or on a pointer that never was one) is
// cocclInvalidArgument instead of a use after free: the handle is compared, never dereferenced,
// before it is found here.
#include <mutex>
#include <unordered_set>

#include "api/api_internal.h"

namespace coccl {
namespace {
std::mutex& mu() {
  static std::mutex m;
  return m;
}
std::unordered_set<const cocclComm*>& live() {
  static auto* s = new std::unordered_set<const cocclComm*>();  // never destroyed: atexit-safe
  return *s;
}
}  // namespace

void registerComm(const cocclComm* comm) {
  std::lock_guard<std::mutex> lock(mu());
  live().insert(comm);
}

bool unregisterComm(const cocclComm* comm) {
  std::lock_guard<std::mutex> lock(mu());
  return live().erase(comm) == 1;
}

bool isLiveComm(const cocclComm* comm) {
  std::lock_guard<std::mutex> lock(mu());
  return live().count(comm) == 1;
}

void checkLiveComm(const cocclComm* comm) {
  COCCL_CHECK_ARG(comm != nullptr, "comm is NULL");
  COCCL_CHECK_ARG(isLiveComm(comm),
                  "comm %p is not a live communicator (destroyed or aborted already, or never "
                  "returned by cocclCommInitRank)",
                  static_cast<const void*>(comm));
}

}  // namespace coccl
