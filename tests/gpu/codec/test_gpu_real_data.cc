// The real tensor-parallel payloads (../shared/data, or $COCCL_DATA_DIR) through the CUDA
// kernels and the host codecs: every rank's tensor encoded and decoded, and the all-reduce's
// owner step (p = 4, each rank as the owner), bit for bit. Skips without a GPU or the data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "gpu_test_util.h"
#include "kernels/device_codec.h"
#include "tp_data.h"

namespace coccl {
namespace test {
namespace {

const std::vector<TpCase>& cases() {
  static const std::vector<TpCase> c = [] {
    const std::string dir = findTpDataDir();
    return dir.empty() ? std::vector<TpCase>{} : loadTpCases(dir);
  }();
  return c;
}

std::vector<uint8_t> bytesOf(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> b(v.size() * 2);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

#define COCCL_REQUIRE_DATA()                                                     \
  do {                                                                           \
    COCCL_REQUIRE_GPU();                                                         \
    if (cases().empty()) GTEST_SKIP() << "no real TP data (set COCCL_DATA_DIR)"; \
  } while (0)

TEST(GpuRealData, EncodeAndDecodeEveryRankMatchTheHost) {
  COCCL_REQUIRE_DATA();
  for (const std::string& base : variantSpecs()) {
    for (int g : blockSizes()) {
      CodecPtr c = makeCodec(withBlock(base, g));
      const CodecDesc d = c->deviceDesc();
      for (const TpCase& tc : cases()) {
        for (size_t r = 0; r < tc.ranks.size(); ++r) {
          SCOPED_TRACE(c->spec() + " " + tc.name + " rank " + std::to_string(r));
          const size_t n = tc.ranks[r].size();
          const std::vector<uint8_t> in = bytesOf(tc.ranks[r]);
          // as bf16 (the data's type) and widened to fp32
          for (cocclDataType_t dt : {cocclBfloat16, cocclFloat32}) {
            std::vector<uint8_t> typed = in;
            if (dt == cocclFloat32) {
              std::vector<float> f(n);
              for (size_t i = 0; i < n; ++i) f[i] = kmath::bf16ToFloat(tc.ranks[r][i]);
              typed = toTyped(f, cocclFloat32);
            }
            const std::vector<uint8_t> want = hostEncode(*c, typed, dt, n);
            DevBuf din = DevBuf::from(typed);
            DevBuf dout(want.size());
            kernels::encode(d, din.data(), dt, n, dout.data(), nullptr);
            const std::vector<uint8_t> got = dout.download();
            const long i = firstDiff(got, want);
            ASSERT_LT(i, 0) << describeDiff(got, want, i, n, g);
            DevBuf dec(n * typeSize(dt));
            kernels::decode(d, dout.data(), n, dt, dec.data(), nullptr);
            ASSERT_EQ(firstTypedDiff(dec.download(), hostDecode(*c, want, n, dt), dt, false), -1);
          }
        }
      }
    }
  }
}

TEST(GpuRealData, OwnerStepOfTheAllReduceMatchesTheHost) {
  COCCL_REQUIRE_DATA();
  double worst = 0.0;
  for (const std::string& base : variantSpecs()) {
    CodecPtr c = makeCodec(withBlock(base, 128));
    const CodecDesc d = c->deviceDesc();
    for (const TpCase& tc : cases()) {
      const int p = static_cast<int>(tc.ranks.size());
      const size_t n = tc.ranks[0].size();
      std::vector<std::vector<uint8_t>> typed(p), ins(p);
      std::vector<DevBuf> raw, enc;
      raw.reserve(p);
      enc.reserve(p);
      for (int r = 0; r < p; ++r) {
        typed[r] = bytesOf(tc.ranks[r]);
        ins[r] = hostEncode(*c, typed[r], cocclBfloat16, n);
        raw.push_back(DevBuf::from(typed[r]));
        enc.push_back(DevBuf::from(ins[r]));
      }
      for (int self = 0; self < p; ++self) {
        SCOPED_TRACE(c->spec() + " " + tc.name + " owner " + std::to_string(self));
        std::vector<const void*> ptrs(p);
        for (int r = 0; r < p; ++r) ptrs[r] = r == self ? nullptr : enc[r].data();
        DevBuf out(kernels::payloadBytes(d, cocclBfloat16, n)), dec(2 * n);
        kernels::decodeReduceEncode(d, ptrs.data(), p, self, raw[self].data(), cocclBfloat16, n,
                                    1.0f, out.data(), dec.data(), nullptr);
        std::vector<uint8_t> wantOut, wantDec;
        hostReduce(*c, ins, self, typed[self], cocclBfloat16, n, 1.0f, &wantOut, &wantDec);
        const std::vector<uint8_t> gotOut = out.download();
        const long i = firstDiff(gotOut, wantOut);
        ASSERT_LT(i, 0) << describeDiff(gotOut, wantOut, i, n, 128);
        const std::vector<uint8_t> gotDec = dec.download();
        ASSERT_EQ(firstTypedDiff(gotDec, wantDec, cocclBfloat16, false), -1);
        // and the result is the all-reduce: relative L2 error against the exact sum
        double num = 0, den = 0;
        for (size_t k = 0; k < n; ++k) {
          double exact = 0;
          for (int r = 0; r < p; ++r) exact += kmath::bf16ToFloat(tc.ranks[r][k]);
          const double e = loadAs(gotDec, cocclBfloat16, k) - exact;
          num += e * e;
          den += exact * exact;
        }
        const double rel = std::sqrt(num / den);
        worst = std::max(worst, rel);
        EXPECT_LT(rel, 0.08) << "relative L2 error of the reduced tensor";
      }
    }
  }
  std::printf("[codec gpu] real data: %zu cases, worst relative L2 error of the owner step %.4f\n",
              cases().size(), worst);
}

}  // namespace
}  // namespace test
}  // namespace coccl
