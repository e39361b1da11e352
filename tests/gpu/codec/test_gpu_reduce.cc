// CUDA decodeReduceEncode (the two-shot owner step) and decodeAccumulate against the host
// codecs, bit for bit: p = 1..8 payloads, with the owner's raw input at several ranks and
// without one, SUM and AVG, in place, every codec variant.
#include <gtest/gtest.h>

#include "gpu_test_util.h"
#include "kernels/device_codec.h"

namespace coccl {
namespace test {
namespace {

struct ReduceCase {
  std::vector<std::vector<uint8_t>> ins;  // payloads (ins[self] unused)
  std::vector<uint8_t> selfIn;            // typed raw input of rank self
};

ReduceCase makeCase(const Codec& c, int p, int self, cocclDataType_t dt, size_t n, int g,
                    uint32_t seed) {
  ReduceCase rc;
  rc.ins.resize(p);
  for (int r = 0; r < p; ++r) {
    // one rank with edge blocks, the others normal data of different scales
    const std::vector<float> x =
        r == 1 ? edgeInput(n, g, seed + r) : randomInput(n, seed + 100 * r, 1.0f + 0.5f * r);
    const std::vector<uint8_t> typed = toTyped(x, dt);
    if (r == self) rc.selfIn = typed;
    rc.ins[r] = hostEncode(c, typed, dt, n);
  }
  return rc;
}

// Runs kernels::decodeReduceEncode; inPlace: decoded is written over the self input.
void devReduce(const CodecDesc& d, const ReduceCase& rc, int self, cocclDataType_t dt, size_t n,
               float scale, bool inPlace, std::vector<uint8_t>* out,
               std::vector<uint8_t>* decoded) {
  const int p = static_cast<int>(rc.ins.size());
  std::vector<DevBuf> bufs;
  std::vector<const void*> ptrs(p, nullptr);
  bufs.reserve(p);
  for (int r = 0; r < p; ++r) {
    if (r == self) continue;
    bufs.push_back(DevBuf::from(rc.ins[r]));
    ptrs[r] = bufs.back().data();
  }
  DevBuf selfBuf = self >= 0 ? DevBuf::from(rc.selfIn) : DevBuf(16);
  const size_t bytes = kernels::payloadBytes(d, dt, n);
  DevBuf dout(bytes);
  DevBuf ddec(n * typeSize(dt));
  void* decPtr = inPlace ? selfBuf.data() : ddec.data();
  kernels::decodeReduceEncode(d, ptrs.data(), p, self, self >= 0 ? selfBuf.data() : nullptr, dt, n,
                              scale, dout.data(), decPtr, nullptr);
  *out = dout.download();
  *decoded = inPlace ? selfBuf.download(0, n * typeSize(dt)) : ddec.download();
}

void checkReduce(const std::string& spec, cocclDataType_t dt, int p, int self, float scale,
                 size_t n, bool inPlace = false) {
  CodecPtr c = makeCodec(spec);
  const CodecDesc d = c->deviceDesc();
  SCOPED_TRACE(spec + " " + typeName(dt) + " p=" + std::to_string(p) +
               " self=" + std::to_string(self) + " scale=" + std::to_string(scale) +
               " n=" + std::to_string(n) + (inPlace ? " in place" : ""));
  const ReduceCase rc = makeCase(*c, p, self, dt, n, d.block, 1000 * p + self + 7);
  std::vector<uint8_t> wantOut, wantDec, gotOut, gotDec;
  hostReduce(*c, rc.ins, self, rc.selfIn, dt, n, scale, &wantOut, &wantDec);
  devReduce(d, rc, self, dt, n, scale, inPlace, &gotOut, &gotDec);
  const long i = firstDiff(gotOut, wantOut);
  ASSERT_LT(i, 0) << describeDiff(gotOut, wantOut, i, n, d.block);
  const long k = firstTypedDiff(gotDec, wantDec, dt, false);
  ASSERT_LT(k, 0) << "decoded element " << k;
}

TEST(GpuReduce, DecodeReduceEncodeEveryPAndSelf) {
  COCCL_REQUIRE_GPU();
  for (const std::string& base : variantSpecs()) {
    for (int p = 1; p <= 8; ++p) {
      for (int self : {-1, 0, p / 2, p - 1}) {
        for (bool avg : {false, true}) {
          if (p == 1 && avg) continue;
          const float scale = avg ? 1.0f / static_cast<float>(p) : 1.0f;
          checkReduce(withBlock(base, 128), cocclBfloat16, p, self, scale, 50001);
        }
      }
    }
  }
}

TEST(GpuReduce, DecodeReduceEncodeEveryBlockSizeAndType) {
  COCCL_REQUIRE_GPU();
  for (const std::string& base : variantSpecs())
    for (int g : blockSizes())
      for (cocclDataType_t dt : codecTypes())
        for (size_t n : {size_t{1}, size_t{129}, size_t{2305}, size_t{100003}})
          checkReduce(withBlock(base, g), dt, 4, 2, 0.25f, n);
}

// Enough tiles that every warp of the resident grid takes several (the staged kernel's ring of
// slots wraps, reduce_staged.cuh), with a partial last tile: the most inputs a slot holds with
// a raw input and one more (the direct loop), without one; G = 32 (the largest slots) in fp16,
// and in place (the prefetched tile beside the one being stored).
TEST(GpuReduce, DecodeReduceEncodeManyTilesAWarp) {
  COCCL_REQUIRE_GPU();
  for (const std::string& base :
       {std::string("fp8_ash_ds:format=e4m3"), std::string("int8:rotate=auto")}) {
    for (cocclDataType_t dt : {cocclBfloat16, cocclFloat32})
      for (int p : {4, 8, 9})
        for (int self : {0, -1})
          checkReduce(withBlock(base, 128), dt, p, self, p == 4 ? 0.25f : 1.0f, 3000017);
    checkReduce(withBlock(base, 32), cocclFloat16, 8, 3, 1.0f, 3000017);
    checkReduce(withBlock(base, 32), cocclFloat16, 4, 1, 0.25f, 3000017, true);
    checkReduce(withBlock(base, 512), cocclBfloat16, 6, 5, 1.0f, 3000017, true);
  }
}

TEST(GpuReduce, DecodeReduceEncodeInPlace) {
  COCCL_REQUIRE_GPU();
  for (const std::string& base : variantSpecs())
    for (cocclDataType_t dt : codecTypes())
      checkReduce(withBlock(base, 256), dt, 3, 1, 1.0f, 70001, true);
}

TEST(GpuReduce, DecodeAccumulateOfPPayloads) {
  COCCL_REQUIRE_GPU();
  for (const std::string& base : variantSpecs()) {
    for (int g : blockSizes()) {
      CodecPtr c = makeCodec(withBlock(base, g));
      const CodecDesc d = c->deviceDesc();
      for (int p : {1, 2, 3, 4, 8}) {
        const cocclDataType_t dt = p % 2 ? cocclBfloat16 : cocclFloat32;
        const size_t n = 65537 + 2 * p;
        SCOPED_TRACE(c->spec() + " p=" + std::to_string(p));
        std::vector<std::vector<uint8_t>> payloads(p);
        std::vector<DevBuf> bufs;
        std::vector<const void*> ptrs(p);
        bufs.reserve(p);
        for (int r = 0; r < p; ++r) {
          payloads[r] = hostEncode(*c, toTyped(edgeInput(n, g, 40 + r), dt), dt, n);
          bufs.push_back(DevBuf::from(payloads[r]));
          ptrs[r] = bufs.back().data();
        }
        const std::vector<float> acc0 = randomInput(n, 3, 2.0f);
        std::vector<float> want = acc0;
        for (int r = 0; r < p; ++r) c->decodeAccumulate(payloads[r].data(), n, dt, want.data());
        std::vector<uint8_t> accBytes(n * 4), wantBytes(n * 4);
        std::memcpy(accBytes.data(), acc0.data(), n * 4);
        std::memcpy(wantBytes.data(), want.data(), n * 4);
        DevBuf dacc = DevBuf::from(accBytes);
        kernels::decodeAccumulate(d, ptrs.data(), p, n, dt, reinterpret_cast<float*>(dacc.data()),
                                  nullptr);
        // fp32 sums with NaN: any NaN matches (the host's NaN payload is its compiler's choice)
        const long k = firstTypedDiff(dacc.download(), wantBytes, cocclFloat32, true);
        ASSERT_LT(k, 0) << "element " << k;
      }
    }
  }
}

// The payloads the kernels write feed the next step: device encode -> device reduce ->
// host decode equals the host's pipeline end to end.
TEST(GpuReduce, DevicePipelineMatchesTheHostPipeline) {
  COCCL_REQUIRE_GPU();
  for (const std::string& base : variantSpecs()) {
    CodecPtr c = makeCodec(withBlock(base, 128));
    const CodecDesc d = c->deviceDesc();
    const size_t n = 262147;
    const int p = 4;
    std::vector<std::vector<uint8_t>> typed(p);
    std::vector<DevBuf> raw, enc;
    raw.reserve(p);
    enc.reserve(p);
    std::vector<const void*> ptrs(p);
    for (int r = 0; r < p; ++r) {
      typed[r] = toTyped(randomInput(n, 70 + r), cocclBfloat16);
      raw.push_back(DevBuf::from(typed[r]));
      enc.emplace_back(kernels::payloadBytes(d, cocclBfloat16, n));
      kernels::encode(d, raw[r].data(), cocclBfloat16, n, enc[r].data(), nullptr);
      ptrs[r] = enc[r].data();
    }
    DevBuf out(kernels::payloadBytes(d, cocclBfloat16, n)), dec(2 * n);
    kernels::decodeReduceEncode(d, ptrs.data(), p, 2, raw[2].data(), cocclBfloat16, n, 0.25f,
                                out.data(), dec.data(), nullptr);
    std::vector<std::vector<uint8_t>> hostIns(p);
    for (int r = 0; r < p; ++r) hostIns[r] = hostEncode(*c, typed[r], cocclBfloat16, n);
    std::vector<uint8_t> wantOut, wantDec;
    hostReduce(*c, hostIns, 2, typed[2], cocclBfloat16, n, 0.25f, &wantOut, &wantDec);
    EXPECT_EQ(firstDiff(out.download(), wantOut), -1) << c->spec();
    EXPECT_EQ(firstTypedDiff(dec.download(), wantDec, cocclBfloat16, false), -1) << c->spec();
  }
}

}  // namespace
}  // namespace test
}  // namespace coccl
