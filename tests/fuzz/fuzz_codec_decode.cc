// Fuzzes every built-in codec's host decode, decodeAccumulate and decodeReduceEncode (and
// encode) on arbitrary payload bytes of the right length. The input picks the spec, the data
// type, the element count, p and self; the rest of it is the payload bytes (cycled to the
// needed length). Every output is an exactly sized heap buffer, so ASan reports any write (or
// read) out of bounds. Checked besides: decode is deterministic; decodeAccumulate onto zeros
// equals decode to fp32; decodeReduceEncode's `decoded` equals decode(out); a lossy codec never
// throws on a type it supports.
#include <cmath>

#include "codecs/codec.h"
#include "core/dtype.h"
#include "core/error.h"
#include "fuzz_util.h"

using namespace coccl;
using coccl::fuzz::Buf;
using coccl::fuzz::fail;

namespace {

const char* const kSpecs[] = {
    "none",
    "int8",
    "int8:rotate=0",
    "int8:rotate=1",
    "int8:block=32",
    "int8:block=64,rotate=1",
    "int8:block=256,rotate=0",
    "int8:block=512",
    "fp8_ash_ds",
    "fp8_ash_ds:format=e5m2",
    "fp8_ash_ds:block=32",
    "fp8_ash_ds:block=64,format=e5m2",
    "fp8_ash_ds:block=256",
    "fp8_ash_ds:block=512,format=e5m2",
    "fp8_ash_ds:lambda=0",
    "fp8_ash_ds:alpha_min=1e-19,alpha_max=1e19",
};
constexpr int kNumSpecs = sizeof(kSpecs) / sizeof(kSpecs[0]);

CodecPtr codecFor(int i) {
  static CodecPtr cache[kNumSpecs];
  if (!cache[i]) cache[i] = makeCodec(kSpecs[i]);  // a spec of this list must parse
  return cache[i];
}

void expectSame(const char* what, const Codec& c, cocclDataType_t dt, size_t count,
                const uint8_t* a, const uint8_t* b) {
  const size_t es = dtypeSize(dt);
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(a + i * es, b + i * es, es) == 0) continue;
    if (fuzz::isNaNAt(dt, a, i) && fuzz::isNaNAt(dt, b, i)) continue;
    fail(format("%s: %s, %s, count %zu: element %zu differs", what, c.spec().c_str(),
                dtypeName(dt), count, i));
  }
}

bool sameFloat(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const int si = in.u8() % kNumSpecs;
  const auto dt = static_cast<cocclDataType_t>(in.u8() % cocclNumTypes);
  const size_t count = in.u16() % 1100;  // up to 2 blocks of 512 and a partial one
  const int p = 1 + in.u8() % 4;
  const int self = in.u8() % p;
  const bool avg = in.u8() & 1;
  const Codec& c = *codecFor(si);

  const bool supported = c.supportsType(dt);
  const bool lossy = !c.lossless();
  const bool floatType = dt == cocclFloat32 || dt == cocclFloat16 || dt == cocclBfloat16;
  // Throwing Error is the documented answer for an unsupported type; a lossy codec on one of
  // its types must not throw.
  // decode: any type the codec supports; decodeAccumulate: floating-point ones (fp64 and fp8
  // too for none); decodeReduceEncode: fp32, fp16, bf16.
  const bool decodeOk = supported;
  const bool accumulateOk = supported && (lossy ? floatType : isFloatingType(dt));
  const bool reduceOk = supported && floatType;
  const size_t es = dtypeSize(dt);
  const size_t pb = supported ? c.encodedBytes(count, dt) : 0;

  Buf payload(pb);
  in.fill(payload.get(), pb);

  // decode, twice: same bytes.
  Buf out1(count * es, 0x11), out2(count * es, 0x22);
  try {
    c.decode(payload.get(), count, dt, out1.get());
    c.decode(payload.get(), count, dt, out2.get());
    if (count * es && std::memcmp(out1.get(), out2.get(), count * es) != 0)
      expectSame("decode twice", c, dt, count, out1.get(), out2.get());
  } catch (const Error&) {
    if (decodeOk) fail(format("decode threw: %s %s", c.spec().c_str(), dtypeName(dt)));
  }

  // decodeAccumulate onto zeros = decode to fp32 (of the same payload; the payload of a lossy
  // codec does not depend on dt, for none it holds dt).
  {
    Buf acc(count * sizeof(float), 0);
    try {
      c.decodeAccumulate(payload.get(), count, dt, reinterpret_cast<float*>(acc.get()));
      if (dt == cocclFloat32 && count) {
        for (size_t i = 0; i < count; ++i) {
          float a, d;
          std::memcpy(&a, acc.get() + 4 * i, 4);
          std::memcpy(&d, out1.get() + 4 * i, 4);
          if (!sameFloat(a, 0.0f + d))
            fail(format("decodeAccumulate != decode: %s count %zu element %zu: %g vs %g",
                        c.spec().c_str(), count, i, a, d));
        }
      }
    } catch (const Error&) {
      if (accumulateOk)
        fail(format("decodeAccumulate threw: %s %s", c.spec().c_str(), dtypeName(dt)));
    }
  }

  // decodeReduceEncode: p payloads (ins[self] null), the owner's raw input, exact outputs.
  {
    std::unique_ptr<Buf> ins[4];
    const void* insp[4] = {nullptr, nullptr, nullptr, nullptr};
    for (int r = 0; r < p; ++r) {
      if (r == self) continue;
      ins[r] = std::make_unique<Buf>(pb);
      in.fill(ins[r]->get(), pb, 7 * static_cast<size_t>(r) + 1);
      insp[r] = ins[r]->get();
    }
    Buf selfIn(count * es);
    in.fill(selfIn.get(), count * es, 3);
    Buf o(pb, 0x33), scratch(count * sizeof(float), 0x44), decoded(count * es, 0x55);
    try {
      c.decodeReduceEncode(insp, p, self, selfIn.get(), dt, count, avg ? 1.0f / p : 1.0f,
                           o.get(), reinterpret_cast<float*>(scratch.get()), decoded.get());
      Buf back(count * es, 0x66);
      c.decode(o.get(), count, dt, back.get());
      expectSame("decodeReduceEncode decoded vs decode(out)", c, dt, count, decoded.get(),
                 back.get());
    } catch (const Error&) {
      if (reduceOk)
        fail(format("decodeReduceEncode threw: %s %s", c.spec().c_str(), dtypeName(dt)));
    }
  }

  // encode of arbitrary input bytes (any floats, NaN and Inf included) into an exact payload.
  {
    Buf raw(count * es), enc(pb, 0x77);
    in.fill(raw.get(), count * es, 5);
    try {
      c.encode(raw.get(), dt, count, enc.get());
    } catch (const Error&) {
      if (decodeOk) fail(format("encode threw: %s %s", c.spec().c_str(), dtypeName(dt)));
    }
  }
  return 0;
}
