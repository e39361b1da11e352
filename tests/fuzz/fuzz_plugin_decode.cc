// Fuzzes the in-tree codec plug-ins (plugins/int4, plugins/tah: the .so files of this build,
// loaded through coccl's plug-in loader) at their ABI v1 host operations, the calls coccl
// makes: decode, decodeAccumulate (1..4 payloads), decodeReduceEncode and encode on arbitrary
// payload and input bytes of the right length (include/coccl_codec.h, "Garbage payloads").
// Input: [spec][dtype][count u16][p][self][mode] then the bytes that fill every buffer (cycled).
// Every buffer is an exactly sized heap allocation (the workspace too: workspaceBytes() bytes,
// 256-byte aligned, as coccl passes it), so ASan reports any read or write out of bounds.
// Checked besides, per the ABI contract: every operation returns COCCL_CODEC_OK on a count the
// instance takes; a refused count (encodedBytes 0: tah's strict=1 on a partial row) is refused
// by every operation, which then writes nothing (nor on count 0); decode and encode are
// deterministic; decodeAccumulate of n payloads onto acc is ((acc + d0) + d1) + ... in fp32 (d:
// decode to fp32); decodeReduceEncode's out is encode() of the fp32 sum in rank order (first
// term assigned, then scaled: neither plug-in has CAP_OWN_SUM_ORDER), its decoded decode(out).
#include <cmath>
#include <new>
#include <string>
#include <vector>

#include "coccl_codec.h"
#include "codecs/abi/registry.h"
#include "core/dtype.h"
#include "core/error.h"
#include "fuzz_util.h"
#include "kernels/float_convert.h"

#if !defined(COCCL_FUZZ_INT4_PLUGIN) || !defined(COCCL_FUZZ_TAH_PLUGIN)
#error "tests/fuzz/CMakeLists.txt passes the plug-ins' paths"
#endif

using namespace coccl;
using coccl::fuzz::Buf;
using coccl::fuzz::fail;

namespace {

// Plug-in instances: int4 (block sizes 32..2048, rotate 0/1/auto, rne and stochastic rounding)
// and tah (rows of 64..4096, strict=0: partial last rows padded; two strict=1 ones, which
// refuse partial rows).
const char* const kSpecs[] = {
    "int4",
    "int4:block=32",
    "int4:block=2048",
    "int4:rotate=0",
    "int4:rotate=1",
    "int4:block=32,rotate=1",
    "int4:block=2048,rotate=1",
    "int4:block=2048,rotate=0",
    "int4:round=stochastic",
    "int4:block=32,round=stochastic,seed=42",
    "int4:block=2048,rotate=1,round=stochastic,seed=18446744073709551615",
    "int4:block=64,rotate=0,round=stochastic,seed=7",
    "tah:row=64,strict=0",
    "tah:row=128,low=0.5,strict=0",
    "tah:row=192,low=1,strict=0",
    "tah:row=1024,strict=0",
    "tah:row=4096,low=0,strict=0,had=0",
    "tah:row=64,low=0.0001,strict=0,had=0",
    "tah:row=64",
    "tah:row=256,low=0.3",
    "tah:row=128,low=0.3,strict=0,select=message",  // last: make_corpus.py names specs by index
};
constexpr int kNumSpecs = sizeof(kSpecs) / sizeof(kSpecs[0]);
constexpr size_t kMaxCount = 4500;  // int4 block=2048: 2 blocks and a partial; tah row=64: 70 rows
const cocclDataType_t kTypes[] = {cocclFloat32, cocclFloat16, cocclBfloat16};

struct Instance {
  const cocclCodecPlugin_v1_t* d = nullptr;
  void* inst = nullptr;
};
Instance g_inst[kNumSpecs];

// A 256-byte aligned heap buffer of exactly n bytes (nullptr for 0), as coccl's workspace.
struct Workspace {
  explicit Workspace(size_t n) : n(n), p(n ? ::operator new(n, std::align_val_t(256)) : nullptr) {
    if (p) std::memset(p, 0xEE, n);
  }
  ~Workspace() {
    if (p) ::operator delete(p, std::align_val_t(256));
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  size_t n;
  void* p;
};

size_t wsBytes(const Instance& I, size_t count, cocclDataType_t dt, int p) {
  return I.d->workspaceBytes ? I.d->workspaceBytes(I.inst, count, dt, p, 0) : 0;
}

float toFloat(cocclDataType_t dt, const uint8_t* p, size_t i) {
  if (dt == cocclFloat32) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  return dt == cocclFloat16 ? kmath::fp16ToFloat(h) : kmath::bf16ToFloat(h);
}

bool sameFloat(float a, float b) {
  return std::memcmp(&a, &b, 4) == 0 || (std::isnan(a) && std::isnan(b));
}

void expectSame(const char* what, int si, cocclDataType_t dt, size_t count, const uint8_t* a,
                const uint8_t* b) {
  const size_t es = dtypeSize(dt);
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(a + i * es, b + i * es, es) == 0) continue;
    if (fuzz::isNaNAt(dt, a, i) && fuzz::isNaNAt(dt, b, i)) continue;
    fail(format("%s: %s, %s, count %zu: element %zu differs", what, kSpecs[si], dtypeName(dt),
                count, i));
  }
}

void expectRc(int rc, int want, const char* op, int si, cocclDataType_t dt, size_t count) {
  if (rc != want)
    fail(format("%s returned %d (expected %d): %s, %s, count %zu", op, rc, want, kSpecs[si],
                dtypeName(dt), count));
}

// A buffer of an operation that must write nothing (count 0, or a count the instance refuses):
// still all `fill` (a 0-byte Buf's 1 byte too).
void expectUntouched(const Buf& b, uint8_t fill, const char* what, int si, size_t count) {
  for (size_t i = 0; i < (b.n ? b.n : 1); ++i)
    if (b.get()[i] != fill)
      fail(format("%s: %s, count %zu (0 or refused): wrote byte %zu", what, kSpecs[si], count, i));
}

// The fp32 values of a payload (decode to fp32), or fails.
void decodeF32(const Instance& I, int si, const void* payload, size_t count, float* out) {
  Workspace ws(wsBytes(I, count, cocclFloat32, 1));
  expectRc(I.d->host.decode(I.inst, payload, count, cocclFloat32, out, ws.p), COCCL_CODEC_OK,
           "decode (fp32)", si, cocclFloat32, count);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  try {
    loadCodecPlugin(COCCL_FUZZ_INT4_PLUGIN);
    loadCodecPlugin(COCCL_FUZZ_TAH_PLUGIN);
  } catch (const Error& e) {
    fail(format("loading the plug-ins: %s", e.what()));
  }
  const std::vector<CodecEntry> codecs = registeredCodecs();
  for (int i = 0; i < kNumSpecs; ++i) {
    const std::string spec = kSpecs[i];
    const size_t colon = spec.find(':');
    const std::string name = spec.substr(0, colon);
    const std::string params = colon == std::string::npos ? "" : spec.substr(colon + 1);
    for (const CodecEntry& e : codecs)
      if (name == e.desc->name) g_inst[i].d = e.desc;
    if (!g_inst[i].d) fail(format("codec %s is not registered", name.c_str()));
    char err[256] = "";
    if (g_inst[i].d->create(params.c_str(), &g_inst[i].inst, err, sizeof(err)) != 0)
      fail(format("%s: create failed: %s", kSpecs[i], err));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const int si = in.u8() % kNumSpecs;
  const cocclDataType_t dt = kTypes[in.u8() % 3];
  const size_t count = in.u16() % (kMaxCount + 1);
  const int p = 1 + in.u8() % 4;
  const int self = in.u8() % p;
  const uint8_t mode = in.u8();  // bit 0: AVG (scale 1/p); bit 1: decoded NULL; bit 2: in place
  const Instance& I = g_inst[si];
  const cocclCodecPlugin_v1_t& d = *I.d;
  const size_t es = dtypeSize(dt);
  const size_t pb = d.encodedBytes(I.inst, count, dt);
  const bool refused = count > 0 && pb == 0;
  if (refused && count % d.blockElems(I.inst) == 0)
    fail(format("%s refused count %zu, a whole number of blocks", kSpecs[si], count));
  const int ok = refused ? COCCL_CODEC_E_INVALID : COCCL_CODEC_OK;
  const bool writesNothing = refused || count == 0;  // count 0 is a no-op for every operation

  // Payloads (ins[0] is the one decoded and encoded), n = p of them.
  std::vector<Buf> pay;
  const void* ins[4] = {nullptr, nullptr, nullptr, nullptr};
  for (int r = 0; r < p; ++r) {
    pay.emplace_back(pb);
    in.fill(pay.back().get(), pb, 7 * static_cast<size_t>(r));
  }
  for (int r = 0; r < p; ++r) ins[r] = pay[static_cast<size_t>(r)].get();
  // Their fp32 values (decode to fp32), for the checks of decodeAccumulate and
  // decodeReduceEncode.
  std::vector<std::vector<float>> f32(static_cast<size_t>(p));
  if (!refused && count)
    for (int r = 0; r < p; ++r) {
      f32[static_cast<size_t>(r)].resize(count);
      decodeF32(I, si, ins[r], count, f32[static_cast<size_t>(r)].data());
    }

  // decode, twice: rc, same bytes.
  Buf out1(count * es, 0x11), out2(count * es, 0x22);
  {
    Workspace ws(wsBytes(I, count, dt, 1));
    expectRc(d.host.decode(I.inst, ins[0], count, dt, out1.get(), ws.p), ok, "decode", si, dt,
             count);
    expectRc(d.host.decode(I.inst, ins[0], count, dt, out2.get(), ws.p), ok, "decode", si, dt,
             count);
    if (writesNothing) {
      expectUntouched(out1, 0x11, "decode", si, count);
    } else {
      expectSame("decode twice", si, dt, count, out1.get(), out2.get());
    }
  }

  // decodeAccumulate of the p payloads onto arbitrary fp32 values.
  {
    Buf acc(count * sizeof(float));
    in.fill(acc.get(), acc.n, 11);
    Buf acc0(acc.n);
    std::memcpy(acc0.get(), acc.get(), acc.n);
    Workspace ws(wsBytes(I, count, dt, p));
    expectRc(d.host.decodeAccumulate(I.inst, ins, p, count, dt,
                                     reinterpret_cast<float*>(acc.get()), ws.p),
             ok, "decodeAccumulate", si, dt, count);
    if (writesNothing) {
      if (std::memcmp(acc.get(), acc0.get(), acc.n ? acc.n : 1) != 0)
        fail(format("decodeAccumulate: %s, count %zu (0 or refused): wrote acc", kSpecs[si],
                    count));
    } else if (dt == cocclFloat32) {
      std::vector<float> want(count);
      std::memcpy(want.data(), acc0.get(), acc0.n);
      for (const std::vector<float>& dk : f32)
        for (size_t i = 0; i < count; ++i) want[i] = want[i] + dk[i];
      for (size_t i = 0; i < count; ++i) {
        float a;
        std::memcpy(&a, acc.get() + 4 * i, 4);
        if (!sameFloat(a, want[i]))
          fail(format("decodeAccumulate of %d payloads: %s count %zu element %zu: %g, expected %g",
                      p, kSpecs[si], count, i, a, want[i]));
      }
    }
  }

  // decodeReduceEncode: p payloads (ins[self] not read), the owner's raw input, exact outputs.
  {
    const float scale = (mode & 1) ? 1.0f / static_cast<float>(p) : 1.0f;
    Buf selfIn(count * es);
    in.fill(selfIn.get(), selfIn.n, 3);
    Buf selfCopy(selfIn.n);
    std::memcpy(selfCopy.get(), selfIn.get(), selfIn.n);
    Buf o(pb, 0x33), decoded(count * es, 0x55);
    void* dec = (mode & 2) ? nullptr : (mode & 4) ? selfIn.get() : decoded.get();
    const void* dins[4] = {ins[0], ins[1], ins[2], ins[3]};
    dins[self] = nullptr;
    Workspace ws(wsBytes(I, count, dt, p));
    expectRc(d.host.decodeReduceEncode(I.inst, dins, p, self, selfIn.get(), dt, count, scale,
                                       o.get(), dec, ws.p),
             ok, "decodeReduceEncode", si, dt, count);
    if (writesNothing) {
      expectUntouched(o, 0x33, "decodeReduceEncode", si, count);
      expectUntouched(decoded, 0x55, "decodeReduceEncode", si, count);
      if (std::memcmp(selfIn.get(), selfCopy.get(), selfIn.n) != 0)
        fail(format("decodeReduceEncode: %s, count %zu (0 or refused): wrote selfIn", kSpecs[si],
                    count));
    } else {
      // out = encode(fp32 sum in rank order, first term assigned, then scaled).
      std::vector<float> sum(count);
      for (int r = 0; r < p; ++r) {
        const std::vector<float>& dk = f32[static_cast<size_t>(r)];
        for (size_t i = 0; i < count; ++i) {
          const float t = r == self ? toFloat(dt, selfCopy.get(), i) : dk[i];
          sum[i] = r == 0 ? t : sum[i] + t;
        }
      }
      if (scale != 1.0f)
        for (float& v : sum) v = v * scale;
      Buf want(pb, 0x77);
      {
        Workspace ews(wsBytes(I, count, cocclFloat32, 1));
        expectRc(d.host.encode(I.inst, sum.data(), cocclFloat32, count, want.get(), ews.p),
                 COCCL_CODEC_OK, "encode (fp32 sum)", si, cocclFloat32, count);
      }
      if (std::memcmp(want.get(), o.get(), pb) != 0)
        fail(format("decodeReduceEncode: %s, %s, count %zu, p %d, self %d: out is not encode() "
                    "of the fp32 sum",
                    kSpecs[si], dtypeName(dt), count, p, self));
      if (dec) {
        Buf back(count * es, 0x66);
        Workspace dws(wsBytes(I, count, dt, 1));
        expectRc(d.host.decode(I.inst, o.get(), count, dt, back.get(), dws.p), COCCL_CODEC_OK,
                 "decode", si, dt, count);
        expectSame("decodeReduceEncode decoded vs decode(out)", si, dt, count,
                   static_cast<const uint8_t*>(dec), back.get());
      }
    }
  }

  // encode of arbitrary input bytes (any floats, NaN and Inf included) into an exact payload,
  // twice: the same bytes (CAP_DETERMINISTIC, stochastic rounding included).
  {
    Buf raw(count * es), enc1(pb, 0x77), enc2(pb, 0x88);
    in.fill(raw.get(), raw.n, 5);
    Workspace ws(wsBytes(I, count, dt, 1));
    expectRc(d.host.encode(I.inst, raw.get(), dt, count, enc1.get(), ws.p), ok, "encode", si, dt,
             count);
    expectRc(d.host.encode(I.inst, raw.get(), dt, count, enc2.get(), ws.p), ok, "encode", si, dt,
             count);
    if (writesNothing) expectUntouched(enc1, 0x77, "encode", si, count);
    if (pb && std::memcmp(enc1.get(), enc2.get(), pb) != 0)
      fail(format("encode twice: %s, %s, count %zu: different bytes", kSpecs[si], dtypeName(dt),
                  count));
  }
  return 0;
}
