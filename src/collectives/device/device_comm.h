// The device path of a communicator: collectives on device buffers, enqueued on the caller's
// stream. Two transports (COCCL_DEVICE_TRANSPORT): CUDA IPC between the ranks of one host
// (several ranks may share a GPU; one kernel per call exchanging through peer-mapped staging)
// or the real NCCL between any GPUs of any hosts (nccl_path.h). No CUDA type appears here, so
// host-only builds compile everything that includes it (device_stub.cc then provides a
// DeviceComm that is never usable).
//
// Requirements: every rank of the communicator made its CUDA device current (cudaSetDevice)
// before cocclCommInitRank; the same COCCL_DEVICE_TRANSPORT on every rank; for CUDA IPC, ranks
// on one host and at most dev::kMaxRanks of them. Otherwise the device path is off (reason())
// and device buffers are rejected with cocclInvalidUsage.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "coccl.h"

namespace coccl {

class Codec;
class Communicator;
struct CollStats;
struct P2POp;

class DeviceComm {
 public:
  // Collective over the communicator's bootstrap: every rank calls it during init, in order.
  // Never returns null in CUDA builds (check usable()); null in host-only builds.
  static std::unique_ptr<DeviceComm> create(Communicator& c);
  // The CUDA device current on the calling thread when this process already uses CUDA, else -1.
  // Never initialises CUDA (fork safety); -1 in host-only builds.
  static int currentDevice();
  // True when this library was built with the CUDA device path.
  static bool built();
  ~DeviceComm();
  DeviceComm(const DeviceComm&) = delete;
  DeviceComm& operator=(const DeviceComm&) = delete;

  bool usable() const;
  const std::string& reason() const;
  // The CUDA device whose buffers this path takes: -1 when the rank had none at init or the
  // path is off (reason()), i.e. when device buffers would be rejected.
  int device() const;

  // `codec`: the codec chosen by the policy (nullptr = exact). A codec without a device
  // implementation runs exact. Counts as in the public API; buffers on this rank's device.
  void allReduce(const void* in, void* out, size_t count, cocclDataType_t dt, cocclRedOp_t op,
                 const Codec* codec, cocclStream_t stream, CollStats& stats);
  void reduceScatter(const void* in, void* out, size_t recvcount, cocclDataType_t dt,
                     cocclRedOp_t op, const Codec* codec, cocclStream_t stream, CollStats& stats);
  void allGather(const void* in, void* out, size_t sendcount, cocclDataType_t dt,
                 const Codec* codec, cocclStream_t stream, CollStats& stats);
  void broadcast(const void* in, void* out, size_t count, cocclDataType_t dt, int root,
                 cocclStream_t stream, CollStats& stats);
  void reduce(const void* in, void* out, size_t count, cocclDataType_t dt, cocclRedOp_t op,
              int root, cocclStream_t stream, CollStats& stats);
  // Every send and receive of a group (one kernel, on the first operation's stream; the other
  // operations' streams are joined with events).
  void pointToPoint(const std::vector<P2POp>& ops, CollStats& stats);

  // cocclSuccess, or the error a kernel recorded (timeout: cocclSystemError; a peer failed or
  // aborted: cocclRemoteError; this rank aborted: cocclInvalidUsage). Cheap; any thread.
  cocclResult_t asyncError() const;
  // Any thread: running and later kernels of this communicator stop, and peers waiting on this
  // rank are released with an error (poisoned flags). Does not wait.
  void abort();
  // Waits for this rank's kernels and until every peer has consumed what this rank staged for
  // it, so the staging may be freed (finalize / destroy). Throws on a dead peer or timeout.
  void quiesce();

 private:
  DeviceComm();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace coccl
