// Deliberately broken codecs for the battery's own tests: each wraps a real codec and breaks
// one rule of the Codec contract, so exactly the check for that rule fails.
#pragma once

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "codecs/codec.h"
#include "core/error.h"

namespace coccl {
namespace test {

// Forwards every method to a real codec.
class ForwardingCodec : public Codec {
 public:
  explicit ForwardingCodec(CodecPtr inner) : in_(std::move(inner)) {}
  const char* name() const override { return in_->name(); }
  const std::string& spec() const override { return in_->spec(); }
  uint32_t id() const override { return in_->id(); }
  uint32_t formatVersion() const override { return in_->formatVersion(); }
  bool supportsType(cocclDataType_t dt) const override { return in_->supportsType(dt); }
  bool supportsOp(cocclRedOp_t op) const override { return in_->supportsOp(op); }
  bool lossless() const override { return in_->lossless(); }
  size_t blockElems() const override { return in_->blockElems(); }
  size_t encodedBytes(size_t count, cocclDataType_t dt) const override {
    return in_->encodedBytes(count, dt);
  }
  void encode(const void* in, cocclDataType_t dt, size_t count, void* out) const override {
    in_->encode(in, dt, count, out);
  }
  void decode(const void* in, size_t count, cocclDataType_t dt, void* out) const override {
    in_->decode(in, count, dt, out);
  }
  void decodeAccumulate(const void* in, size_t count, cocclDataType_t dt,
                        float* acc) const override {
    in_->decodeAccumulate(in, count, dt, acc);
  }
  void decodeReduceEncode(const void* const* ins, int p, int self, const void* selfIn,
                          cocclDataType_t dt, size_t count, float scale, void* out, float* scratch,
                          void* decoded) const override {
    in_->decodeReduceEncode(ins, p, self, selfIn, dt, count, scale, out, scratch, decoded);
  }
  double elementErrorBound(double rms, double absMax) const override {
    return in_->elementErrorBound(rms, absMax);
  }
  uint32_t capabilities() const override { return in_->capabilities(); }

 protected:
  CodecPtr in_;
};

// encode writes one byte past encodedBytes (an off-by-one in the payload size).
class OverrunCodec : public ForwardingCodec {
 public:
  using ForwardingCodec::ForwardingCodec;
  void encode(const void* in, cocclDataType_t dt, size_t count, void* out) const override {
    in_->encode(in, dt, count, out);
    static_cast<uint8_t*>(out)[in_->encodedBytes(count, dt)] = 0x42;
  }
};

// encode depends on a call counter: every other call flips the lowest bit of the last scale
// word (int8/fp8_ash_ds: byte n-4 of the payload, the word's lowest mantissa bit: the decoded
// values move by one ulp of the scale, well inside the error bound). Repeated runs differ, and so
// do runs on different threads.
class NonDeterministicCodec : public ForwardingCodec {
 public:
  using ForwardingCodec::ForwardingCodec;
  void encode(const void* in, cocclDataType_t dt, size_t count, void* out) const override {
    in_->encode(in, dt, count, out);
    const size_t n = in_->encodedBytes(count, dt);
    if (n >= 4 && (calls_.fetch_add(1) & 1)) static_cast<uint8_t*>(out)[n - 4] ^= 1;
  }

 private:
  mutable std::atomic<uint64_t> calls_{0};
};

// encode depends on the thread: calls from any thread but the first caller's flip the same bit
// as NonDeterministicCodec. Repeated runs on one thread agree; 1 and N threads do not.
class ThreadDependentCodec : public ForwardingCodec {
 public:
  using ForwardingCodec::ForwardingCodec;
  void encode(const void* in, cocclDataType_t dt, size_t count, void* out) const override {
    in_->encode(in, dt, count, out);
    std::thread::id none, self = std::this_thread::get_id();
    first_.compare_exchange_strong(none, self);
    const size_t n = in_->encodedBytes(count, dt);
    if (n >= 4 && first_.load() != self) static_cast<uint8_t*>(out)[n - 4] ^= 1;
  }

 private:
  mutable std::atomic<std::thread::id> first_{};
};

// decodeReduceEncode quantizes the owner's own input (decode(encode(selfIn))) before summing:
// the contract says the owner's raw input is not quantized.
class QuantizedSelfCodec : public ForwardingCodec {
 public:
  using ForwardingCodec::ForwardingCodec;
  void decodeReduceEncode(const void* const* ins, int p, int self, const void* selfIn,
                          cocclDataType_t dt, size_t count, float scale, void* out, float* scratch,
                          void* decoded) const override {
    std::vector<uint8_t> pay(in_->encodedBytes(count, dt));
    std::vector<uint8_t> q(count * (dt == cocclFloat32 ? 4 : 2));
    in_->encode(selfIn, dt, count, pay.data());
    in_->decode(pay.data(), count, dt, q.data());
    in_->decodeReduceEncode(ins, p, self, q.data(), dt, count, scale, out, scratch, decoded);
  }
};

// decode reads one payload byte past encodedBytes (a payload-size off-by-one on the read side).
class OverreadCodec : public ForwardingCodec {
 public:
  using ForwardingCodec::ForwardingCodec;
  void decode(const void* in, size_t count, cocclDataType_t dt, void* out) const override {
    const volatile uint8_t* p = static_cast<const uint8_t*>(in);
    sink_ = p[in_->encodedBytes(count, dt)];
    in_->decode(in, count, dt, out);
  }

 private:
  mutable volatile uint8_t sink_ = 0;
};

// decode turns every NaN into 0 (a lossy codec that forgets non-finite values). With
// `declareNonFinite` it keeps the inner codec's COCCL_CODEC_CAP_NONFINITE (a false claim, which
// non_finite must catch), else it drops the bit (then non_finite only checks memory safety).
class NanDroppingCodec : public ForwardingCodec {
 public:
  NanDroppingCodec(CodecPtr inner, bool declareNonFinite)
      : ForwardingCodec(std::move(inner)), declare_(declareNonFinite) {}
  void decode(const void* in, size_t count, cocclDataType_t dt, void* out) const override {
    in_->decode(in, count, dt, out);
    if (dt != cocclFloat32) return;
    float* y = static_cast<float*>(out);
    for (size_t i = 0; i < count; ++i)
      if (y[i] != y[i]) y[i] = 0.0f;
  }
  uint32_t capabilities() const override {
    const uint32_t c = in_->capabilities();
    return declare_ ? c : (c & ~static_cast<uint32_t>(COCCL_CODEC_CAP_NONFINITE));
  }

 private:
  bool declare_;
};

// Refuses counts that are not whole blocks, as tah's default does (include/coccl_codec.h,
// "Blocks"): encodedBytes 0 and every operation Error(cocclInvalidArgument). kNone is a
// conforming codec; the others break the refusal: encode writes into its payload before refusing,
// refuses with cocclInternalError, or also refuses odd numbers of blocks (one whole block too).
class RefusingCodec : public ForwardingCodec {
 public:
  enum Flaw { kNone, kWritesFirst, kWrongCode, kOddBlocks };
  RefusingCodec(CodecPtr inner, Flaw flaw) : ForwardingCodec(std::move(inner)), flaw_(flaw) {}
  size_t encodedBytes(size_t count, cocclDataType_t dt) const override {
    return taken(count) ? in_->encodedBytes(count, dt) : 0;
  }
  void encode(const void* in, cocclDataType_t dt, size_t count, void* out) const override {
    if (flaw_ == kWritesFirst && !taken(count)) static_cast<uint8_t*>(out)[0] ^= 0xFF;
    refuse(count);
    in_->encode(in, dt, count, out);
  }
  void decode(const void* in, size_t count, cocclDataType_t dt, void* out) const override {
    refuse(count);
    in_->decode(in, count, dt, out);
  }
  void decodeAccumulate(const void* in, size_t count, cocclDataType_t dt,
                        float* acc) const override {
    refuse(count);
    in_->decodeAccumulate(in, count, dt, acc);
  }
  void decodeReduceEncode(const void* const* ins, int p, int self, const void* selfIn,
                          cocclDataType_t dt, size_t count, float scale, void* out, float* scratch,
                          void* decoded) const override {
    refuse(count);
    in_->decodeReduceEncode(ins, p, self, selfIn, dt, count, scale, out, scratch, decoded);
  }

 private:
  bool taken(size_t count) const {
    return count % ((flaw_ == kOddBlocks ? 2 : 1) * in_->blockElems()) == 0;
  }
  void refuse(size_t count) const {
    if (!taken(count))
      throw Error(flaw_ == kWrongCode ? cocclInternalError : cocclInvalidArgument,
                  "refused count " + std::to_string(count));
  }
  Flaw flaw_;
};

}  // namespace test
}  // namespace coccl
