// The staged codec pipeline: compressed AllReduce (two-shot or one-shot), ReduceScatter and
// AllGather on device buffers for any codec with device operations (Codec::device*: the built-ins'
// fused kernels, or a plug-in's launchers, include/coccl_codec.h), moving the encoded pieces with a
// transport's grouped point-to-point bytes (ByteMover). The NCCL executor runs its compressed
// collectives on it (mover: ncclSend/ncclRecv); the CUDA IPC executor runs plug-in codecs on it
// (mover: its P2P kernel), keeping its own fused kernels for the built-ins.
//
// Results are bit for bit those of the host path with the same COCCL_ALGO (same shards, codec
// bytes, reduction order).
// A message is processed in pieces of at most slotBytes of payload per shard; piece k+1 is
// encoded on the caller's stream while piece k moves on the internal stream (two staging sets,
// ordered by events: stream-ordered and CUDA-graph capturable). The pipeline is written down
// at the top of staged_codec.cc.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "coccl.h"
#include "collectives/request.h"
#include "collectives/stats.h"

namespace coccl {

struct CallDesc;
struct DescHeads;

// One grouped exchange of raw device bytes with peers: every rank posts the matching group.
class ByteMover {
 public:
  struct Xfer {
    void* buf;     // send: source, recv: destination (device memory)
    size_t bytes;
    int peer;
    bool send;
  };
  virtual ~ByteMover() = default;
  // Enqueues the whole group on `stream`; returns once it is enqueued. `agree` (null: none;
  // only where agreesInExchange()): the call's descriptor, compared with every rank's, every
  // rank taking part whatever the group, before any byte of the group leaves the transport's
  // staging; a difference is the transport's asynchronous error (cocclInvalidUsage on every
  // rank) and every later exchange moves nothing.
  virtual void exchange(const std::vector<Xfer>& group, const CallDesc* agree,
                        cudaStream_t stream) = 0;
  // Whether exchange() compares a call descriptor (the CUDA IPC P2P kernel: agreePost /
  // agreeCheck; the NCCL mover: 128 bytes more to and from every peer in the group,
  // staged/call_check.h).
  virtual bool agreesInExchange() const { return false; }
  // Whether the call's descriptor may instead travel in 128-byte heads in front of the
  // payloads of its first exchange (call_desc.h DescHeads: every peer has a send and a receive
  // in that group whose buffer and bytes include the head): one operation per peer instead of
  // two, which costs per operation on NCCL's socket transport. The pipeline then calls
  // storeHeads on a stream ordered before that group, posts the group without `agree`, and
  // calls compareHeads on the group's stream after it; a difference is reported as for
  // `agree`. One call's heads at a time.
  virtual bool carriesInHeads() const { return false; }
  virtual void storeHeads(const CallDesc& d, const DescHeads& heads, cudaStream_t stream) {
    (void)d, (void)heads, (void)stream;
  }
  virtual void compareHeads(cudaStream_t stream) { (void)stream; }
  // Whether allGather below exists: a transport whose collective all-gather is faster than its
  // point-to-point (NCCL's ring on a link-bound path runs at ~1.6x its send/recv; device-
  // performance notes) moves the gather stages with it. Such a mover carriesInHeads() where it
  // agreesInExchange(): the gathers carry no `agree`.
  virtual bool hasAllGather() const { return false; }
  // Every rank's `bytes` bytes at send into recv + rank * bytes on every rank (recv holds
  // nranks * bytes; send may be recv + rank * bytes, in place). Enqueued on `stream`. (With
  // heads: each rank's first 128 bytes, {send, 0, recv, bytes}.)
  virtual void allGather(const void* send, void* recv, size_t bytes, cudaStream_t stream) {
    (void)send, (void)recv, (void)bytes, (void)stream;
  }
  // Called when a pipeline fails half-way: peers must get an error instead of waiting forever.
  virtual void abort() = 0;
};

// How the staged pipeline runs a compressed AllReduce (COCCL_ALGO; stagedAllReduceAlgo).
//   TwoShot: reduce-scatter of encoded shards, the owner decodes, sums and encodes once, an
//     all-gather of the owners' payloads; every input and the sum are quantised once; each rank
//     sends 2 (p-1)/p of the payload.
//   OneShot: every rank's encoded input to every rank (the mover's allGather where it has one),
//     every rank sums all p payloads (its own encoded bytes too) in rank order in fp32; only the
//     inputs are quantised; each rank sends (p-1) x the payload: the same bytes as two-shot at
//     p = 2, in one stage at the speed of the mover's all-gather (NCCL's ring on a link-bound
//     path is ~1.6x its send/recv: device-performance notes).
//   Auto: OneShot at p = 2 over a mover with an allGather, else TwoShot.
enum class StagedAllReduce { Auto, TwoShot, OneShot };
// "one-shot" -> OneShot; "two-shot", "direct", "ring" (two-shot at p = 2) -> TwoShot;
// "auto" -> Auto.
StagedAllReduce stagedAllReduceAlgo(const std::string& cocclAlgo);

class StagedCodec {
 public:
  // Allocates the staging (2 sets of 3p+1 slots of slotBytes, each 128-byte aligned with 128
  // bytes in front of it for the call descriptors' heads; an fp32 accumulator of
  // slotBytes elements), the internal stream and events on the current device. Throws Error.
  // `algoSuffix` names the transport in CollStats::algorithm ("nccl": "two-shot/nccl").
  StagedCodec(int nranks, int rank, size_t slotBytes, ByteMover& mover, const char* algoSuffix,
              StagedAllReduce allReduce = StagedAllReduce::Auto);
  ~StagedCodec();
  StagedCodec(const StagedCodec&) = delete;
  StagedCodec& operator=(const StagedCodec&) = delete;

  // The two-level (hierarchical) ReduceScatter and AllReduce of a "hier:" policy entry
  // (r.interCodec set; staged_hier.cc, two_level.h): ranks r = n L + l with L = ranksPerNode
  // (CommContext::ranksPerNode()), in pieces of the host's chunking (chunkBytes =
  // COCCL_CHUNK_BYTES), so that they equal the host path bit for bit; `pipelined`
  // (COCCL_TWO_LEVEL_PIPELINE): the pieces overlap. Until this is called (or with L = 1 or
  // L = nranks) a "hier:" call runs flat with one codec, as on the host.
  void setTwoLevel(int ranksPerNode, size_t chunkBytes, bool pipelined);

  // Whether r (a compressed AllReduce / ReduceScatter / AllGather) can run here: its codec has
  // device operations, a block no larger than a slot, and at most kMaxReduceInputs ranks for
  // the reductions; a two-level call: both codecs have device operations, and at most
  // kMaxReduceInputs ranks a node and nodes.
  bool supports(const CollRequest& r) const;
  // `agree` (only over a mover that agreesInExchange()): the call's first exchange carries
  // its descriptor (makeCallDesc(r)), compared with every rank's before any byte moves between
  // ranks; the call's codec kernels on the caller's stream are not held back (a decode may
  // write recvbuff from stale staging after a difference). Every call of a rank makes at least
  // one exchange (count 0 never gets here). Without it, ranks that disagree in a way that
  // leaves the payload sizes alike (the op, say) get different results silently.
  void run(const CollRequest& r, CollStats& stats, bool agree = false);

  // Bytes of device memory it holds (staging + accumulator), for the init log.
  size_t stagingBytes() const;
  // The internal stream (what quiesce waits for).
  cudaStream_t sideStream() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// fp32 accumulator -> output of type dt, after acc *= scale when scale != 1 (the host's
// scaleFloats + convertFromFloat, bit for bit). Enqueued on `stream`. finish.cu.
void launchFinishReduce(const float* acc, size_t count, float scale, cocclDataType_t dt,
                        void* out, cocclStream_t stream);

// acc[0, count) = value (the host's `assign(count, -0.0f)` of an fp32 sum). finish.cu.
void launchFillFloats(float* acc, size_t count, float value, cocclStream_t stream);

}  // namespace coccl
