// The live handles of the process: communicators and codecs. A handle is registered when
// cocclCommInitRank / cocclCodecCreate creates it and unregistered by the cocclCommDestroy /
// cocclCommAbort / cocclCodecDestroy that frees it, so a call on a destroyed or aborted handle
// (or on a pointer that never was one) is cocclInvalidArgument instead of a use after free: the
// handle is compared, never dereferenced, before it is found here. A communicator's calls also
// count themselves in (CommUse) while they run, and its destroy / abort waits for the count to
// fall to zero before it frees anything: a watchdog thread in cocclCommGetAsyncError, or a query
// on another thread, never touches a communicator that is being freed.
#include <condition_variable>
#include <mutex>
#include <unordered_map>

#include "api/api_internal.h"

namespace coccl {
namespace {

// One map of live pointers (each with its calls in flight) behind a mutex; never destroyed
// (calls during exit stay safe). A retired handle is no longer live; its count only falls.
template <class T>
class LiveSet {
 public:
  static LiveSet& get() {
    static auto* s = new LiveSet();
    return *s;
  }
  void add(const T* h) {
    std::lock_guard<std::mutex> lock(mu_);
    live_[h] = 0;
  }
  bool has(const T* h) {
    std::lock_guard<std::mutex> lock(mu_);
    return live_.count(h) == 1;
  }
  // A call in flight on h: false when h is not live.
  bool acquire(const T* h) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(h);
    if (it == live_.end()) return false;
    ++it->second;
    return true;
  }
  void release(const T* h) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(h);
    if (it != live_.end()) {
      --it->second;
      return;
    }
    auto r = retired_.find(h);
    if (r != retired_.end() && --r->second == 0) cv_.notify_all();
  }
  // No longer live (later calls are rejected); false when it was not live.
  bool retire(const T* h) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(h);
    if (it == live_.end()) return false;
    if (it->second > 0) retired_[h] = it->second;
    live_.erase(it);
    return true;
  }
  // Blocks until the calls in flight on a retired h have returned.
  void waitIdle(const T* h) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] {
      auto r = retired_.find(h);
      return r == retired_.end() || r->second == 0;
    });
    retired_.erase(h);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<const T*, int> live_, retired_;
};

}  // namespace

void registerComm(const cocclComm* comm) {
  LiveSet<cocclComm>::get().add(comm);
}
bool retireComm(const cocclComm* comm) {
  return LiveSet<cocclComm>::get().retire(comm);
}
void waitCommIdle(const cocclComm* comm) {
  LiveSet<cocclComm>::get().waitIdle(comm);
}
bool isLiveComm(const cocclComm* comm) {
  return LiveSet<cocclComm>::get().has(comm);
}
bool acquireComm(const cocclComm* comm) {
  return comm && LiveSet<cocclComm>::get().acquire(comm);
}
void releaseComm(const cocclComm* comm) {
  LiveSet<cocclComm>::get().release(comm);
}

void checkLiveComm(const cocclComm* comm) {
  COCCL_CHECK_ARG(comm != nullptr, "comm is NULL");
  COCCL_CHECK_ARG(isLiveComm(comm),
                  "comm %p is not a live communicator (destroyed or aborted already, or never "
                  "returned by cocclCommInitRank)",
                  static_cast<const void*>(comm));
}

CommUse::CommUse(const cocclComm* comm) : comm_(comm) {
  COCCL_CHECK_ARG(comm != nullptr, "comm is NULL");
  COCCL_CHECK_ARG(acquireComm(comm),
                  "comm %p is not a live communicator (destroyed or aborted already, or never "
                  "returned by cocclCommInitRank)",
                  static_cast<const void*>(comm));
}
CommUse::~CommUse() {
  releaseComm(comm_);
}

void registerCodec(const cocclCodec* codec) {
  LiveSet<cocclCodec>::get().add(codec);
}
bool unregisterCodec(const cocclCodec* codec) {
  return LiveSet<cocclCodec>::get().retire(codec);
}

void checkLiveCodec(const cocclCodec* codec) {
  COCCL_CHECK_ARG(codec != nullptr, "codec is NULL");
  COCCL_CHECK_ARG(LiveSet<cocclCodec>::get().has(codec),
                  "codec %p is not a live codec handle (destroyed already, or never returned by "
                  "cocclCodecCreate)",
                  static_cast<const void*>(codec));
}

}  // namespace coccl
