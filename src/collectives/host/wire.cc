#include "collectives/host/wire.h"

#include <cstring>
#include <vector>

#include "collectives/host/reduce.h"
#include "core/error.h"

namespace coccl {

Wire::Wire(const Codec* codec, cocclDataType_t dt, cocclRedOp_t op, int nranks)
    : codec_(codec),
      dt_(dt),
      op_(op),
      nranks_(nranks),
      esize_(dtypeSize(dt)),
      scale_(op == cocclAvg ? 1.0f / static_cast<float>(nranks) : 1.0f) {}

size_t Wire::align() const { return codec_ ? codec_->blockElems() : 1; }

size_t Wire::bytes(size_t count) const {
  return codec_ ? codec_->encodedBytes(count, dt_) : count * esize_;
}

const void* Wire::pack(const void* in, size_t count, void* scratch) const {
  if (!codec_) return in;
  codec_->encode(in, dt_, count, scratch);
  return scratch;
}

const void* Wire::packPartial(const float* acc, size_t count, void* scratch) const {
  codec_->encode(acc, cocclFloat32, count, scratch);
  return scratch;
}

const void* Wire::ownerReduce(const void* const* ins, int self, const void* selfIn, size_t count,
                              void* userOut, void* wireOut, float* scratch) const {
  if (!codec_) {
    // Exact: inputs in rank order, the owner's own raw input in its place.
    std::vector<const void*> all(ins, ins + nranks_);
    all[self] = selfIn;
    reduceArrays(userOut, all.data(), nranks_, count, dt_, op_, nranks_);
    return userOut;
  }
  if (wireOut) {
    // AllReduce: sum in fp32, encode once; every rank (this one too) outputs decode(wireOut).
    codec_->decodeReduceEncode(ins, nranks_, self, selfIn, dt_, count, scale_, wireOut, scratch,
                               userOut);
    return wireOut;
  }
  // ReduceScatter: the result stays here, no re-encode: decode-accumulate in rank order.
  std::memset(scratch, 0, count * sizeof(float));
  for (int r = 0; r < nranks_; ++r) {
    if (r == self)
      accumulateToFloat(selfIn, dt_, count, scratch);
    else
      codec_->decodeAccumulate(ins[r], count, dt_, scratch);
  }
  return finish(scratch, count, userOut, nullptr);
}

void Wire::accumulateRaw(const void* selfIn, size_t count, float* acc) const {
  accumulateToFloat(selfIn, dt_, count, acc);
}

void Wire::accumulate(const void* in, const void* selfIn, size_t count, float* acc) const {
  std::memset(acc, 0, count * sizeof(float));
  codec_->decodeAccumulate(in, count, dt_, acc);
  accumulateToFloat(selfIn, dt_, count, acc);
}

const void* Wire::finish(float* acc, size_t count, void* userOut, void* wireOut) const {
  if (scale_ != 1.0f) scaleFloats(acc, count, scale_);
  if (wireOut) {
    codec_->encode(acc, cocclFloat32, count, wireOut);
    codec_->decode(wireOut, count, dt_, userOut);
    return wireOut;
  }
  convertFromFloat(acc, count, dt_, userOut);
  return userOut;
}

void Wire::unpack(const void* in, size_t count, void* userOut) const {
  if (!codec_) {
    if (in != userOut) std::memcpy(userOut, in, count * esize_);
    return;
  }
  codec_->decode(in, count, dt_, userOut);
}

}  // namespace coccl
