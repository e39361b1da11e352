// NcclComm: a communicator of the real NCCL (nccl_library.h: loaded at run time, never
// linked) beside a coccl communicator, its unique id travelling over coccl's bootstrap. It
// carries device memory between ranks on any GPUs of any nodes: grouped point-to-point bytes
// (the compressed collectives' encoded chunks) and NCCL's own uncompressed collectives. Knows
// nothing of codecs; every operation is enqueued on the given CUDA stream and returns at once.
//
// Errors: every failing NCCL call throws coccl::Error with NCCL's result (the numeric values of
// cocclResult_t and ncclResult_t are equal) and NCCL's ncclGetLastError message.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "coccl.h"

namespace coccl {

class Bootstrap;

class NcclComm {
 public:
  // Collective over `bs`: every rank calls it, with its CUDA device current. Never throws for a
  // rank that has no NCCL or a failed init: every rank ends usable(), or every rank not, with a
  // reason naming the rank that failed (a rank whose NCCL init fails after the others started
  // theirs leaves them to NCCL's own failure detection).
  explicit NcclComm(Bootstrap& bs);
  // Thread safety: every operation holds the communicator (shared) while inside NCCL, abort and
  // destruction hold it exclusively, so NCCL's communicator is never used after it was freed.
  ~NcclComm();  // ncclCommDestroy; ncclCommAbort after abort() or an asynchronous error
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  bool usable() const;
  const std::string& reason() const;
  int version() const;  // the real NCCL's (e.g. 22809)

  // Runs post() inside one NCCL group (ncclGroupStart / ncclGroupEnd, the group ended even when
  // post throws): NCCL then runs the sends and receives it posts, of several peers, together
  // (no deadlock whatever the order). Counts in bytes.
  void group(const std::function<void()>& post);
  void send(const void* buf, size_t bytes, int peer, cocclStream_t s);
  void recv(void* buf, size_t bytes, int peer, cocclStream_t s);

  // NCCL's own collectives; counts in elements as in coccl.h.
  void allReduce(const void* in, void* out, size_t count, cocclDataType_t dt, cocclRedOp_t op,
                 cocclStream_t s);
  void reduceScatter(const void* in, void* out, size_t recvcount, cocclDataType_t dt,
                     cocclRedOp_t op, cocclStream_t s);
  void allGather(const void* in, void* out, size_t sendcount, cocclDataType_t dt, cocclStream_t s);
  void broadcast(const void* in, void* out, size_t count, cocclDataType_t dt, int root,
                 cocclStream_t s);
  void reduce(const void* in, void* out, size_t count, cocclDataType_t dt, cocclRedOp_t op,
              int root, cocclStream_t s);

  // cocclSuccess or NCCL's asynchronous error (a dead peer: cocclRemoteError). Cheap, any thread.
  cocclResult_t asyncError() const;
  // Stops the NCCL communicator (ncclCommAbort); later operations throw. Any thread, once.
  // Operations in flight on other threads are waited for up to COCCL_TIMEOUT_MS (an operation
  // stuck inside NCCL is then aborted under it, NCCL's own way to release a hung call).
  void abort();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace coccl
