// int8's owner step (rotate=1 and auto) follows the split order int8_block.h documents, bit for
// bit: R = the rotated payload blocks' c q summed, L = the raw input and the other payload
// blocks summed (each in rank order, first term assigned), fwht(R) + L, scale, padding zeroed,
// encode. The reference below is written from that comment with the block math alone.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "codec_test_util.h"
#include "codecs/int8/int8_block.h"

namespace coccl {
namespace test {
namespace {

// The documented order for one payload layout of G-element blocks (codes, then the words).
template <int G>
std::vector<uint8_t> splitReference(const std::vector<std::vector<uint8_t>>& ins, int self,
                                    const std::vector<float>& selfIn, size_t n, float scale,
                                    int mode) {
  const size_t nb = (n + G - 1) / G;
  std::vector<uint8_t> out(nb * (G + 4));
  for (size_t b = 0; b < nb; ++b) {
    float rot[G], lin[G], z[G], y[G];
    bool haveRot = false, haveLin = false;
    for (size_t r = 0; r < ins.size(); ++r) {
      bool rotated = false;
      if (static_cast<int>(r) == self) {
        for (int i = 0; i < G; ++i) z[i] = b * G + i < n ? selfIn[b * G + i] : 0.0f;
      } else {
        uint32_t w;
        std::memcpy(&w, ins[r].data() + nb * G + 4 * b, 4);
        rotated = kmath::int8DecodeUntransformed<G>(
            reinterpret_cast<const int8_t*>(ins[r].data() + b * G), w, mode, z);
      }
      float* acc = rotated ? rot : lin;
      bool& have = rotated ? haveRot : haveLin;
      for (int i = 0; i < G; ++i) acc[i] = have ? acc[i] + z[i] : z[i];
      have = true;
    }
    if (haveRot) kmath::fwht<G>(rot);
    float s[G];
    for (int i = 0; i < G; ++i) {
      s[i] = haveRot ? (haveLin ? rot[i] + lin[i] : rot[i]) : lin[i];
      if (scale != 1.0f) s[i] = s[i] * scale;
      if (b * G + i >= n) s[i] = 0.0f;
    }
    const uint32_t w =
        kmath::int8EncodeBlock<G>(s, y, reinterpret_cast<int8_t*>(out.data() + b * G), mode);
    std::memcpy(out.data() + nb * G + 4 * b, &w, 4);
  }
  return out;
}

// Rank r's data: zero-mean, mean-shifted (auto takes the plain form there) and one-sided
// stretches, a block of -0, a block of +0, and (special) NaN / Inf / tiny values: RAW blocks.
std::vector<float> rankData(size_t n, int r, bool special) {
  std::vector<float> v = synth(Dist::StudentT3, n, 900 + r);
  for (size_t i = 0; i < n; ++i) {
    const size_t part = (i / 256) % 4;
    if (part == 1) v[i] += 6.0f;                // mean-shifted
    if (part == 2) v[i] = std::fabs(v[i]) * 3;  // one-sided
  }
  for (size_t i = 512; i < 640 && i < n; ++i) v[i] = -0.0f;
  for (size_t i = 640; i < 768 && i < n; ++i) v[i] = 0.0f;
  if (special && n > 1100) {
    v[1000] = std::numeric_limits<float>::quiet_NaN();
    v[1030 + r] = r % 2 ? -std::numeric_limits<float>::infinity() : 1e-41f;
  }
  return v;
}

template <int G>
void checkSplit(const std::string& rotate) {
  CodecPtr c = makeCodec("int8:block=" + std::to_string(G) + ",rotate=" + rotate);
  const int mode = c->deviceDesc().rotate;
  ASSERT_TRUE(kmath::int8SplitSum(mode));
  for (cocclDataType_t dt : {cocclFloat32, cocclBfloat16, cocclFloat16}) {
    for (size_t n : {size_t{1}, size_t{G + 5}, size_t{4099}}) {
      for (int p : {2, 3, 4, 8}) {
        for (int self : {0, p - 1, 1 % p}) {
          for (bool special : {false, true}) {
            const float scale = p == 4 ? 0.25f : 1.0f;
            SCOPED_TRACE(c->spec() + " " + dtName(dt) + " n=" + std::to_string(n) +
                         " p=" + std::to_string(p) + " self=" + std::to_string(self) +
                         (special ? " special" : ""));
            std::vector<std::vector<uint8_t>> enc(p);
            std::vector<const void*> ptrs(p, nullptr);
            Typed selfTyped;
            for (int r = 0; r < p; ++r) {
              const Typed t = makeTyped(rankData(n, r, special), dt);
              if (r == self) {
                selfTyped = t;
              } else {
                enc[r] = encodeAll(*c, t.data(), dt, n);
                ptrs[r] = enc[r].data();
              }
            }
            const std::vector<float> selfF(selfTyped.exact.begin(), selfTyped.exact.end());
            const std::vector<uint8_t> want = splitReference<G>(enc, self, selfF, n, scale, mode);
            std::vector<uint8_t> got(c->encodedBytes(n, dt)), dec(n * elemSize(dt));
            std::vector<uint8_t> redec(dec.size());
            std::vector<float> scratch(n);
            c->decodeReduceEncode(ptrs.data(), p, self, selfTyped.data(), dt, n, scale, got.data(),
                                  scratch.data(), dec.data());
            ASSERT_EQ(got, want);
            c->decode(got.data(), n, dt, redec.data());
            ASSERT_EQ(dec, redec);
          }
        }
      }
    }
  }
}

TEST(Int8SplitSum, OwnerStepFollowsTheDocumentedOrder) {
  checkSplit<128>("auto");
  checkSplit<128>("1");
  checkSplit<32>("auto");
  checkSplit<512>("1");
}

// A block's values before its transform: for a plain or RAW block exactly its decode, for a
// rotated one c q with one rounding (so that fwht(sum c q) is the rotated blocks' decode).
TEST(Int8SplitSum, UntransformedValuesAreTheDecodeOrCq) {
  constexpr int G = 128;
  for (const char* rotate : {"auto", "1", "0"}) {
    CodecPtr c = makeCodec(std::string("int8:block=128,rotate=") + rotate);
    const int mode = c->deviceDesc().rotate;
    const size_t n = 16 * G;
    std::vector<float> x = rankData(n, 3, true);
    for (size_t i = 1024; i < 1024 + G; ++i) x[i] = 8.0f + x[i];  // a plain block under auto
    const std::vector<uint8_t> pay = encodeAll(*c, x.data(), cocclFloat32, n);
    int kinds[3] = {0, 0, 0};  // rotated, plain, RAW
    for (size_t b = 0; b < n / G; ++b) {
      SCOPED_TRACE(c->spec() + " block " + std::to_string(b));
      const int8_t* q = reinterpret_cast<const int8_t*>(pay.data() + b * G);
      uint32_t w;
      std::memcpy(&w, pay.data() + n + 4 * b, 4);
      float u[G], d[G];
      const bool rotated = kmath::int8DecodeUntransformed<G>(q, w, mode, u);
      kmath::int8DecodeBlock<G>(q, w, mode, d);
      const bool raw = kmath::isRawWord(w);
      ++kinds[rotated ? 0 : raw ? 2 : 1];
      ASSERT_EQ(rotated, !raw && kmath::int8WordRotated(w, mode));
      for (int i = 0; i < G; ++i) {
        const float want = rotated ? static_cast<float>(q[i]) * kmath::bitsFloat(w) : d[i];
        ASSERT_EQ(kmath::floatBits(u[i]), kmath::floatBits(want)) << i;
      }
    }
    EXPECT_GT(kinds[2], 0) << rotate;  // the NaN / Inf / -0 / +0 blocks
    EXPECT_EQ(kinds[0] > 0, mode != kmath::kInt8Plain) << rotate;
    if (mode == kmath::kInt8Auto) {
      EXPECT_GT(kinds[1], 0);
    }
  }
}

// Where every payload block takes the plain form (auto on data with a large block mean) the
// split sum has no rotated term: the owner step is the linear composition bit for bit.
TEST(Int8SplitSum, AllPlainPayloadsGiveTheLinearComposition) {
  CodecPtr c = makeCodec("int8");
  const int mode = c->deviceDesc().rotate;
  const size_t g = c->blockElems(), n = 37 * g, nb = n / g;  // (a short last block may rotate)
  const int p = 4, self = 1;
  std::vector<std::vector<uint8_t>> enc(p);
  std::vector<const void*> ptrs(p, nullptr);
  std::vector<float> selfIn, acc(n, 0.0f);
  for (int r = 0; r < p; ++r) {
    std::vector<float> v = synth(Dist::Normal, n, 70 + r);
    for (float& e : v) e += 8.0f;
    std::vector<float> term = v;
    if (r == self) {
      selfIn = v;
    } else {
      enc[r] = encodeAll(*c, v.data(), cocclFloat32, n);
      ptrs[r] = enc[r].data();
      for (size_t b = 0; b < nb; ++b) {
        uint32_t w;
        std::memcpy(&w, enc[r].data() + nb * g + 4 * b, 4);
        ASSERT_FALSE(kmath::int8WordRotated(w, mode)) << "rank " << r << " block " << b;
      }
      term = decodeF32(*c, enc[r], n);
    }
    for (size_t i = 0; i < n; ++i) acc[i] = r == 0 ? term[i] : acc[i] + term[i];
  }
  for (float& a : acc) a = a * 0.25f;
  const std::vector<uint8_t> want = encodeAll(*c, acc.data(), cocclFloat32, n);
  std::vector<uint8_t> got(want.size());
  std::vector<float> scratch(n);
  c->decodeReduceEncode(ptrs.data(), p, self, selfIn.data(), cocclFloat32, n, 0.25f, got.data(),
                        scratch.data(), nullptr);
  EXPECT_EQ(got, want);
}

// The split order loses nothing against the linear one (rotate=0 keeps it): on data whose
// blocks are mostly rotated, the owner step's result is as close to the exact sum.
TEST(Int8SplitSum, AsAccurateAsTheLinearOrder) {
  CodecPtr c = makeCodec("int8:rotate=1");
  const size_t n = 1 << 16;
  const int p = 8;
  std::vector<std::vector<uint8_t>> enc(p);
  std::vector<const void*> ptrs(p, nullptr);
  std::vector<double> exact(n, 0.0);
  std::vector<float> lin(n, 0.0f);
  Typed selfTyped;
  for (int r = 0; r < p; ++r) {
    const Typed t = makeTyped(synth(Dist::OutlierChannels, n, 40 + r), cocclBfloat16);
    for (size_t i = 0; i < n; ++i) exact[i] += t.exact[i];
    if (r == 0) {
      selfTyped = t;
      for (size_t i = 0; i < n; ++i) lin[i] = static_cast<float>(t.exact[i]);
    } else {
      enc[r] = encodeAll(*c, t.data(), cocclBfloat16, n);
      ptrs[r] = enc[r].data();
      const std::vector<float> d = decodeF32(*c, enc[r], n);
      for (size_t i = 0; i < n; ++i) lin[i] = lin[i] + d[i];
    }
  }
  std::vector<uint8_t> got(c->encodedBytes(n, cocclBfloat16));
  std::vector<float> scratch(n);
  c->decodeReduceEncode(ptrs.data(), p, 0, selfTyped.data(), cocclBfloat16, n, 1.0f, got.data(),
                        scratch.data(), nullptr);
  const double errSplit = relL2(decodeF32(*c, got, n), exact);
  const double errLinear = relL2(roundTrip(*c, makeTyped(lin, cocclFloat32)), exact);
  EXPECT_LE(errSplit, errLinear * 1.01 + 1e-7) << errSplit << " vs " << errLinear;
}

}  // namespace
}  // namespace test
}  // namespace coccl
