// Two-level (hierarchical) ReduceScatter and AllReduce on device buffers (staged_codec.h,
// setTwoLevel): the schedule of two_level.h with the codecs' device operations on the caller's
// stream and the mover's grouped exchanges on the same stream (so every operation is ordered
// after the ones issued before it, as the schedule assumes), its staging in hierStaging. The
// results equal the host path's (collectives/host/hierarchical.cc) bit for bit.
#include <algorithm>

#include "collectives/staged/staged_impl.h"
#include "collectives/staged/two_level.h"

namespace coccl {
void StagedCodec::Impl::hierReduce(const CollRequest& r, CollStats& stats) {
  // The schedule's operations: kernels and the mover's exchanges, all on the caller's stream.
  class DeviceTwoLevelOps final : public TwoLevelOps {
   public:
    DeviceTwoLevelOps(Impl& m, cudaStream_t s, void* ws) : m_(m), s_(s), ws_(ws) {}
    char* staging(size_t bytes) override {  // grown before the pipeline started
      COCCL_CHECK_INTERNAL(m_.hierStaging.fits(bytes),
                           "two-level staging of %zu bytes not provided", bytes);
      return static_cast<char*>(m_.hierStaging.ptr());
    }
    void encode(const Codec& c, const void* in, cocclDataType_t dt, size_t n, void* out) override {
      c.deviceEncode(in, dt, n, out, ws_, s_);
    }
    void decodeAccumulate(const Codec& c, const void* const* ins, int k, size_t n,
                          cocclDataType_t dt, float* acc) override {
      c.deviceDecodeAccumulate(ins, k, n, dt, acc, ws_, s_);
    }
    void accumulate(const void* in, cocclDataType_t dt, size_t n, float* acc) override {
      const CodecDesc raw{};  // the None codec: decodeAccumulate of raw elements
      kernels::decodeAccumulate(raw, &in, 1, n, dt, acc, s_);
    }
    void fill(float* acc, size_t n, float value) override {
      launchFillFloats(acc, n, value, reinterpret_cast<cocclStream_t>(s_));
    }
    void finish(const float* acc, size_t n, float scale, cocclDataType_t dt, void* out) override {
      launchFinishReduce(acc, n, scale, dt, out, reinterpret_cast<cocclStream_t>(s_));
    }
    void decode(const Codec& c, const void* in, size_t n, cocclDataType_t dt, void* out) override {
      c.deviceDecode(in, n, dt, out, ws_, s_);
    }
    void exchange(const std::vector<Xfer>& group) override {
      if (group.empty() && !m_.agreePending) return;
      m_.group.clear();
      for (const Xfer& x : group) m_.group.push_back({x.buf, x.bytes, x.peer, x.send});
      m_.move(m_.group, s_);
    }

   private:
    Impl& m_;
    cudaStream_t s_;
    void* ws_;
  };

  Impl& m = *this;
  TwoLevelCall c;
  c.allReduce = r.coll == Coll::AllReduce;
  c.in = r.in;
  c.out = r.out;
  c.count = r.count;
  c.dt = r.dt;
  c.op = r.op;
  c.intra = r.codec;
  c.inter = r.interCodec;
  TwoLevelShape sh;
  sh.nranks = m.p;
  sh.rank = m.me;
  sh.ranksPerNode = m.ranksPerNode;
  sh.chunkBytes = m.hierChunkBytes;
  sh.pipelined = m.hierPipelined;
  stats.algorithm = m.hierName.c_str();
  stats.wireBytesSent = 0;
  if (r.count == 0) return;
  cudaStream_t s = m.user(r.stream);
  // The codecs' device workspace: the largest any of their operations on a piece asks for.
  const size_t chunk = twoLevelChunkElems(c, sh);
  const int N = m.p / m.ranksPerNode;
  const size_t wsNeed = std::max({r.codec->deviceWorkspaceBytes(chunk, r.dt, m.ranksPerNode),
                                  r.interCodec->deviceWorkspaceBytes(chunk, cocclFloat32, N),
                                  r.interCodec->deviceWorkspaceBytes(chunk, r.dt, N)});
  void* ws = grown(m.ws, wsNeed, "", "two-level collective", "codec device workspace", s);
  // The staging too, before anything is enqueued: a growth refused in a stream capture (or a
  // failed cudaMalloc) throws here, with the transport intact, not inside the pipeline (which
  // aborts the transport on failure).
  grown(m.hierStaging, twoLevelStagingBytes(c, sh), "", "two-level collective", "device staging",
        s);
  DeviceTwoLevelOps ops(m, s, ws);
  m.pipeline(s, [&] { stats.wireBytesSent = runTwoLevel(c, sh, ops); });
}

}  // namespace coccl
