// The live handles of the process: communicators and codecs. A handle is registered when
// cocclCommInitRank / cocclCodecCreate creates it and unregistered by the cocclCommDestroy /
// cocclCommAbort / cocclCodecDestroy that frees it, so a call on a destroyed or aborted handle
// (or on a pointer that never was one) is cocclInvalidArgument instead of a use after free: the
// handle is compared, never dereferenced, before it is found here.
#include <mutex>
#include <unordered_set>

#include "api/api_internal.h"

namespace coccl {
namespace {

// One set of live pointers behind a mutex; never destroyed (calls during exit stay safe).
template <class T>
class LiveSet {
 public:
  static LiveSet& get() {
    static auto* s = new LiveSet();
    return *s;
  }
  void add(const T* h) {
    std::lock_guard<std::mutex> lock(mu_);
    live_.insert(h);
  }
  bool remove(const T* h) {
    std::lock_guard<std::mutex> lock(mu_);
    return live_.erase(h) == 1;
  }
  bool has(const T* h) {
    std::lock_guard<std::mutex> lock(mu_);
    return live_.count(h) == 1;
  }

 private:
  std::mutex mu_;
  std::unordered_set<const T*> live_;
};

}  // namespace

void registerComm(const cocclComm* comm) { LiveSet<cocclComm>::get().add(comm); }
bool unregisterComm(const cocclComm* comm) { return LiveSet<cocclComm>::get().remove(comm); }
bool isLiveComm(const cocclComm* comm) { return LiveSet<cocclComm>::get().has(comm); }

void checkLiveComm(const cocclComm* comm) {
  COCCL_CHECK_ARG(comm != nullptr, "comm is NULL");
  COCCL_CHECK_ARG(isLiveComm(comm),
                  "comm %p is not a live communicator (destroyed or aborted already, or never "
                  "returned by cocclCommInitRank)",
                  static_cast<const void*>(comm));
}

void registerCodec(const cocclCodec* codec) { LiveSet<cocclCodec>::get().add(codec); }
bool unregisterCodec(const cocclCodec* codec) { return LiveSet<cocclCodec>::get().remove(codec); }

void checkLiveCodec(const cocclCodec* codec) {
  COCCL_CHECK_ARG(codec != nullptr, "codec is NULL");
  COCCL_CHECK_ARG(LiveSet<cocclCodec>::get().has(codec),
                  "codec %p is not a live codec handle (destroyed already, or never returned by "
                  "cocclCodecCreate)",
                  static_cast<const void*>(codec));
}

}  // namespace coccl
