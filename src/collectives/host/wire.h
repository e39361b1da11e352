// How a chunk of a reducing collective travels between ranks: exact (the data type's own bytes,
// sent straight from the user's buffers) or encoded by a codec. The host algorithms (two-shot,
// ring) are written once against this interface.
#pragma once

#include <cstddef>

#include "codecs/codec.h"
#include "coccl.h"

namespace coccl {

class Wire {
 public:
  Wire(const Codec* codec, cocclDataType_t dt, cocclRedOp_t op, int nranks);

  bool compressed() const { return codec_ != nullptr; }
  cocclDataType_t dtype() const { return dt_; }
  cocclRedOp_t op() const { return op_; }
  const Codec* codec() const { return codec_; }
  size_t elemSize() const { return esize_; }
  // Chunk boundaries must be multiples of this many elements.
  size_t align() const;
  // Bytes on the wire for `count` elements.
  size_t bytes(size_t count) const;

  // The bytes to send for in[0, count): `in` itself when exact, else encoded into scratch.
  const void* pack(const void* in, size_t count, void* scratch) const;
  // Encodes an fp32 partial sum (ring hops).
  const void* packPartial(const float* acc, size_t count, void* scratch) const;
  // Owner step of two-shot: combines the wire inputs of every rank (ins[self] ignored) with the
  // owner's raw input, in rank order. Writes the user-visible result to userOut and, when
  // `wireOut` is given, the bytes to forward to the other ranks (returned; for exact wires the
  // result is userOut itself). scratch: count floats (compressed only).
  const void* ownerReduce(const void* const* ins, int self, const void* selfIn, size_t count,
                          void* userOut, void* wireOut, float* scratch) const;
  // acc += (float)raw input (compressed wires only).
  void accumulateRaw(const void* selfIn, size_t count, float* acc) const;
  // Ring hop: acc (fp32, count) = decode(in) + own raw input. Exact wires don't use this.
  void accumulate(const void* in, const void* selfIn, size_t count, float* acc) const;
  // Final result of a ring reduce-scatter in fp32 (scaled here for AVG): writes userOut and,
  // when wireOut is given (AllReduce), encodes once and outputs decode(wireOut) so every rank
  // decodes the same bytes. Returns the bytes to forward (wireOut) or userOut.
  const void* finish(float* acc, size_t count, void* userOut, void* wireOut) const;
  // Decodes forwarded bytes into the user's output (exact: copy unless in == out).
  void unpack(const void* in, size_t count, void* userOut) const;

 private:
  const Codec* codec_;
  cocclDataType_t dt_;
  cocclRedOp_t op_;
  int nranks_;
  size_t esize_;
  float scale_;  // 1 or 1/nranks for AVG
};

}  // namespace coccl
