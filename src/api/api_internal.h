// Shared pieces of the C boundary: the communicator handle, the exception guard that turns
// coccl::Error into cocclResult_t (and a cocclGetLastError message), and group queueing.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "coccl.h"
#include "codecs/codec.h"
#include "collectives/communicator.h"
#include "core/error.h"
#include "core/log.h"

struct cocclComm {
  std::unique_ptr<coccl::Communicator> impl;
  std::mutex opMutex;  // held by the running operation; abort/destroy take it after stopping it
  // Guards `impl` where an init deferred inside a group may set it concurrently: the init's
  // assignment, and the reads of cocclCommAbort and cocclCommGetAsyncError (other threads).
  std::mutex implMutex;
  int cudaDev = -1;
  std::string lastError;
};

struct cocclCodec {
  coccl::CodecPtr codec;
};

namespace coccl {

// More bytes than any buffer holds (user space is below 2^57 on the 64-bit platforms coccl runs
// on: x86-64 with 5-level paging 2^56, arm64 2^52; pointers may carry tags in their top bits,
// so the argument checks limit the size, not the address).
constexpr size_t kMaxBufferBytes = size_t{1} << 57;

// Communication failures (a peer lost, a timeout, a transport or CUDA error): they break the
// communicator; the others (bad arguments, ranks that disagree) leave it usable.
inline bool isCommunicationError(cocclResult_t code) {
  return code == cocclSystemError || code == cocclRemoteError || code == cocclInternalError ||
         code == cocclUnhandledCudaError;
}

// Records a failure: the message goes to cocclGetLastError and the WARN log; communication
// failures break the communicator (its peers then fail fast too).
cocclResult_t reportError(cocclComm* comm, const char* fn, cocclResult_t code,
                          const std::string& msg);

bool acquireComm(const cocclComm* comm);  // a call in flight (false: not live); releaseComm ends it
void releaseComm(const cocclComm* comm);
// Ends a call in flight on comm (acquireComm) at the scope's end; nullptr: none.
struct CommRelease {
  const cocclComm* comm;
  ~CommRelease() {
    if (comm) releaseComm(comm);
  }
};

// Runs f, turning exceptions into error codes (reportError). A live comm stays counted in (as
// CommUse does) for the whole call, until its error is reported: a destroy / abort on another
// thread cannot free it in between, nor a new communicator take its address. f checks that it
// is live (usableComm); calls that pass nullptr here take a CommUse themselves.
template <class F>
cocclResult_t guarded(cocclComm* comm, const char* fn, F&& f) {
  const CommRelease held{comm && acquireComm(comm) ? comm : nullptr};
  try {
    f();
    return cocclSuccess;
  } catch (const Error& e) {
    return reportError(comm, fn, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return reportError(comm, fn, cocclSystemError, "out of memory");
  } catch (const std::exception& e) {
    return reportError(comm, fn, cocclInternalError, e.what());
  } catch (...) {
    return reportError(comm, fn, cocclInternalError, "unknown exception");
  }
}

// Validates a communicator handle and that it can run operations.
Communicator& usableComm(cocclComm* comm);

// Live handles (handles.cc): registered at creation, retired by the destroy / abort that frees
// them. checkLive* throw cocclInvalidArgument for NULL or a handle that is not live.
void registerComm(const cocclComm* comm);
bool retireComm(const cocclComm* comm);    // false: it was not live; later calls are rejected
void waitCommIdle(const cocclComm* comm);  // after retireComm: until its calls in flight return
bool isLiveComm(const cocclComm* comm);
void checkLiveComm(const cocclComm* comm);
// A call in flight on a live communicator for the scope (cocclInvalidArgument when it is not
// live): its destroy / abort on another thread waits for the scope to end before freeing it.
class CommUse {
 public:
  explicit CommUse(const cocclComm* comm);
  ~CommUse();
  CommUse(const CommUse&) = delete;
  CommUse& operator=(const CommUse&) = delete;

 private:
  const cocclComm* comm_;
};
// The same for codec handles (cocclCodecCreate / cocclCodecDestroy).
void registerCodec(const cocclCodec* codec);
bool unregisterCodec(const cocclCodec* codec);  // false: it was not live
void checkLiveCodec(const cocclCodec* codec);

// Groups (per thread). When inside a group, enqueue() stores the operation and returns true;
// the caller then returns cocclSuccess and the operation runs at the outermost GroupEnd.
bool inGroup();
struct QueuedOp {
  cocclComm* comm = nullptr;     // nullptr for deferred inits
  bool isP2P = false;
  CollRequest p2p{};
  const cocclCodec* p2pCodec = nullptr;  // p2p's codec handle, checked again at cocclGroupEnd
  std::function<void()> run;     // collective or init
};
void enqueue(QueuedOp op);

}  // namespace coccl
