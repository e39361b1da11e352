// The tah codec plug-in (plugins/tah) through coccl's registry: loadCodecPlugin(path), then
// makeCodec("tah:..."). Sizes against the formula, the 3-bit row selection, round-trip error
// against fp64 on synthetic activations (normal, outlier channels, rows with a few huge
// elements), determinism, decodeReduceEncode against decode-sum-encode, partial rows, strict
// mode and bad specs. Real activations (tests/data/pp_activations): test_tah_data.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "codecs/abi/registry.h"
#include "core/error.h"
#include "tah_math.h"
#include "tah_test_util.h"

namespace coccl {
namespace {

// The payload size written out independently of tah_layout (README.md "Payload format").
size_t formulaBytes(size_t count, size_t R, double low) {
  const size_t rows = (count + R - 1) / R, tiles = rows * (R / 64);
  const size_t n3 = static_cast<size_t>(std::floor(static_cast<double>(rows) * low + 1e-9));
  return 8 * ((rows + 31) / 32) + 4 * tiles + (tiles + 3) / 4 * 4 + (rows - n3) * R / 2 +
         n3 * 3 * R / 8;
}

TEST(Tah, SpecAndCanonicalForm) {
  EXPECT_EQ(tahCodec("tah")->spec(), "tah:row=4096,low=0.2,strict=1,had=1,select=group");
  EXPECT_EQ(tahCodec("tah:row=1024,low=0.25")->spec(),
            "tah:row=1024,low=0.25,strict=1,had=1,select=group");
  EXPECT_EQ(tahCodec("tah:row=64,low=1,select=message")->spec(),
            "tah:row=64,low=1,strict=1,had=1,select=message");
  EXPECT_EQ(tahCodec("tah")->blockElems(), 4096u);
  for (const char* bad :
       {"tah:row=100", "tah:row=0", "tah:row=70000", "tah:low=1.5", "tah:low=0.12345", "tah:low=x",
        "tah:strict=2", "tah:foo=1", "tah:select=all", "tah:select="}) {
    try {
      tahCodec(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("tah"), std::string::npos) << e.what();
    }
  }
  try {
    tahCodec("tah:row=100");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 64"), std::string::npos) << e.what();
  }
}

TEST(Tah, BytesEqualFormulaAndEncodeWritesExactly) {
  for (const char* spec : {"tah:row=1024", "tah:row=64,low=0.5", "tah:row=4096,low=0"})
    for (size_t rows : {1, 4, 5, 31, 32, 33, 100}) {
      auto c = tahCodec(spec);
      const size_t R = c->blockElems(), n = rows * R;
      const double low = std::string(spec).find("0.5") != std::string::npos     ? 0.5
                         : std::string(spec).find("low=0") != std::string::npos ? 0.0
                                                                                : 0.2;
      for (cocclDataType_t dt : kTypes) {
        ASSERT_EQ(c->encodedBytes(n, dt), formulaBytes(n, R, low)) << spec << " rows " << rows;
        const std::vector<float> x = activations(rows, R, "normal", 7 + rows);
        const std::vector<uint8_t> in = toType(x, dt);
        std::vector<uint8_t> out(c->encodedBytes(n, dt) + 64, 0xA5);
        c->encode(in.data(), dt, n, out.data());
        for (size_t i = c->encodedBytes(n, dt); i < out.size(); ++i)
          ASSERT_EQ(out[i], 0xA5) << spec << ": encode wrote past encodedBytes";
      }
    }
  // bits per element at row 4096: 3.8 code bits + 0.5 scale/zero + 0.125 flag, ~4.43
  auto c = tahCodec("tah");
  EXPECT_NEAR(8.0 * c->encodedBytes(1000 * 4096, cocclBfloat16) / (1000.0 * 4096), 4.425, 0.01);
}

// Rows with k equal nonzero elements have entropy log2 k: the 3-bit rows are the smallest k, of
// the message (select=message) or of each group of 32 rows (select=group, the default: group g
// of rows [32g, e) has floor(0.2 e) - floor(0.2 * 32g) of them, and its prefix word is
// floor(0.2 * 32g)).
TEST(Tah, LowestEntropyRowsGetThreeBits) {
  const size_t R = 1024, rows = 100;
  std::vector<float> x(rows * R, 0.0f);
  std::vector<size_t> k(rows);
  for (size_t r = 0; r < rows; ++r) {
    k[r] = 1 + (r * 37) % rows * 10;  // distinct, 1..991
    for (size_t i = 0; i < k[r]; ++i) x[r * R + (i * 7) % R] = (i % 2 ? 1.5f : -1.5f);
  }
  auto lowest = [&](size_t a, size_t e, size_t n, std::vector<int>* want) {
    std::vector<size_t> order(e - a);
    std::iota(order.begin(), order.end(), a);
    std::sort(order.begin(), order.end(), [&](size_t p, size_t q) { return k[p] < k[q]; });
    for (size_t i = 0; i < n; ++i) (*want)[order[i]] = 1;
  };
  for (const char* spec : {"tah:row=1024,select=message", "tah:row=1024"}) {
    const bool group = std::string(spec).find("message") == std::string::npos;
    auto c = tahCodec(spec);
    std::vector<uint8_t> pay(c->encodedBytes(rows * R, cocclFloat32));
    c->encode(x.data(), cocclFloat32, rows * R, pay.data());
    std::vector<int> want(rows, 0);
    if (!group) lowest(0, rows, 20, &want);  // floor(0.2 * 100)
    for (size_t g = 0; group && g < (rows + 31) / 32; ++g) {
      const size_t e = std::min(rows, 32 * g + 32);
      lowest(32 * g, e, e / 5 - 32 * g / 5, &want);
    }
    EXPECT_EQ(threeBitRows(pay, rows), want) << spec;
    uint32_t prefix = 0;  // the group prefixes count the 3-bit rows before each group
    for (size_t g = 0; g < (rows + 31) / 32; ++g) {
      uint32_t bits, pre;
      std::memcpy(&bits, pay.data() + 8 * g, 4);
      std::memcpy(&pre, pay.data() + 8 * g + 4, 4);
      EXPECT_EQ(pre, prefix) << spec;
      if (group) {
        EXPECT_EQ(pre, 32 * g / 5) << spec;
      }
      prefix += static_cast<uint32_t>(__builtin_popcount(bits));
    }
    EXPECT_EQ(prefix, 20u) << spec;
  }
  // equal keys: the rows of lowest index; 37 rows at low=0.3: floor(11.1) = 11 of the message,
  // or floor(9.6) = 9 of rows 0..31 and 11 - 9 = 2 of rows 32..36
  std::vector<float> same = activations(1, R, "normal", 3), y;
  for (int r = 0; r < 37; ++r) y.insert(y.end(), same.begin(), same.end());
  for (const char* spec : {"tah:row=1024,low=0.3,select=message", "tah:row=1024,low=0.3"}) {
    auto c3 = tahCodec(spec);
    std::vector<uint8_t> p3(c3->encodedBytes(y.size(), cocclFloat32));
    c3->encode(y.data(), cocclFloat32, y.size(), p3.data());
    std::vector<int> w3(37, 0);
    const bool group = std::string(spec).find("message") == std::string::npos;
    for (int r = 0; r < 37; ++r) w3[r] = group ? (r < 9 || r == 32 || r == 33) : r < 11;
    EXPECT_EQ(threeBitRows(p3, 37), w3) << spec;
  }
}

// tah_group_low: each group's prefix is the counts before it, no group has more 3-bit rows than
// rows, and the counts add up to the message's n3 (fractions and row counts at the edges).
TEST(Tah, GroupCountsAddUpToTheMessage) {
  for (uint32_t lowL : {0u, 1u, 2000u, 3333u, 5000u, 9999u, 10000u})
    for (size_t rows : {1, 31, 32, 33, 95, 1000, 4097}) {
      const tah_layout_t L = tah_layout(rows * 64, 64, lowL);
      size_t sum = 0;
      for (size_t g = 0; g < L.groups; ++g) {
        uint32_t before;
        const uint32_t n = tah_group_low(rows, lowL, g, &before);
        const size_t e = std::min(rows, 32 * g + 32);
        EXPECT_EQ(before, static_cast<uint32_t>(32 * g * lowL / 10000)) << rows << " " << lowL;
        EXPECT_EQ(before, sum);
        EXPECT_LE(n, e - 32 * g);
        sum += n;
      }
      EXPECT_EQ(sum, L.n3) << rows << " " << lowL;
    }
}

struct ErrStats {
  double worstRow3 = 0, worstRow4 = 0, meanRow = 0;
  size_t overBound = 0;
};

ErrStats roundTrip(const CodecPtr& c, const std::vector<float>& x, size_t R, cocclDataType_t dt) {
  const size_t n = x.size(), rows = n / R;
  const std::vector<uint8_t> in = toType(x, dt);
  const std::vector<float> xr = fromType(in, dt, n);  // the input as the codec sees it
  std::vector<uint8_t> pay(c->encodedBytes(n, dt)), out(in.size());
  c->encode(in.data(), dt, n, pay.data());
  c->decode(pay.data(), n, dt, out.data());
  const std::vector<float> d = fromType(out, dt, n);
  const std::vector<int> three = threeBitRows(pay, rows);
  ErrStats s;
  for (size_t r = 0; r < rows; ++r) {
    double num = 0, den = 0, amax = 0, sq = 0;
    for (size_t i = r * R; i < (r + 1) * R; ++i) {
      amax = std::max(amax, std::fabs(static_cast<double>(xr[i])));
      sq += static_cast<double>(xr[i]) * xr[i];
    }
    const double bound = c->elementErrorBound(std::sqrt(sq / R), amax);
    for (size_t i = r * R; i < (r + 1) * R; ++i) {
      const double e = static_cast<double>(d[i]) - xr[i];
      num += e * e;
      den += static_cast<double>(xr[i]) * xr[i];
      if (std::fabs(e) > bound) ++s.overBound;
    }
    const double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    (three[r] ? s.worstRow3 : s.worstRow4) = std::max(three[r] ? s.worstRow3 : s.worstRow4, rel);
    s.meanRow += rel / rows;
  }
  return s;
}

TEST(Tah, RoundTripNormal) {
  auto c = tahCodec("tah:row=1024");
  for (cocclDataType_t dt : kTypes) {
    const ErrStats s = roundTrip(c, activations(200, 1024, "normal", 11), 1024, dt);
    std::printf("normal %s: worst row rel. err 4-bit %.4f 3-bit %.4f, mean %.4f\n", typeName(dt),
                s.worstRow4, s.worstRow3, s.meanRow);
    EXPECT_EQ(s.overBound, 0u);
    EXPECT_LT(s.worstRow4, 0.12) << typeName(dt);  // 4-bit: ~0.08 (step / sqrt(12))
    EXPECT_LT(s.worstRow3, 0.25) << typeName(dt);  // 3-bit: ~0.17
    EXPECT_GT(s.worstRow3, s.worstRow4);
  }
}

// Outlier channels (a few hidden dimensions 30x larger in every row): the case the pivot swap +
// Hadamard is for; it must beat the plain tiles clearly.
TEST(Tah, OutlierChannelsHadamardHelps) {
  auto with = tahCodec("tah:row=1024"), without = tahCodec("tah:row=1024,had=0");
  for (cocclDataType_t dt : kTypes) {
    const std::vector<float> x = activations(200, 1024, "outlier_channels", 12);
    const ErrStats a = roundTrip(with, x, 1024, dt), b = roundTrip(without, x, 1024, dt);
    std::printf("outlier channels %s: mean row rel. err had=1 %.4f had=0 %.4f\n", typeName(dt),
                a.meanRow, b.meanRow);
    EXPECT_EQ(a.overBound, 0u);
    EXPECT_EQ(b.overBound, 0u);
    EXPECT_LT(a.meanRow, 0.6 * b.meanRow)
        << typeName(dt) << " had " << a.meanRow << " plain " << b.meanRow;
  }
}

TEST(Tah, RowsWithHugeElements) {
  auto c = tahCodec("tah:row=1024");
  for (cocclDataType_t dt : kTypes) {
    const std::vector<float> x = activations(100, 1024, "huge", 13);
    const ErrStats s = roundTrip(c, x, 1024, dt);
    std::printf("huge elements %s: mean row rel. err %.4f, worst %.4f\n", typeName(dt), s.meanRow,
                std::max(s.worstRow3, s.worstRow4));
    EXPECT_EQ(s.overBound, 0u);
    EXPECT_LT(s.meanRow, 0.1) << typeName(dt);
  }
}

TEST(Tah, Deterministic) {
  auto c = tahCodec("tah:row=1024"), c2 = tahCodec("tah:low=0.2,row=1024");
  const std::vector<float> x = activations(77, 1024, "outlier_channels", 14);
  for (cocclDataType_t dt : kTypes) {
    const std::vector<uint8_t> in = toType(x, dt);
    std::vector<uint8_t> a(c->encodedBytes(x.size(), dt)), b(a.size(), 1), d(a.size(), 2);
    c->encode(in.data(), dt, x.size(), a.data());
    c->encode(in.data(), dt, x.size(), b.data());
    c2->encode(in.data(), dt, x.size(), d.data());
    EXPECT_EQ(a, b);
    EXPECT_EQ(a, d);
  }
}

TEST(Tah, DecodeReduceEncodeIsDecodeSumEncode) {
  auto c = tahCodec("tah:row=1024");
  const size_t R = 1024, rows = 40, n = rows * R;
  const int p = 3;
  for (cocclDataType_t dt : kTypes)
    for (float scale : {1.0f, 1.0f / 3.0f}) {
      std::vector<std::vector<uint8_t>> raw(p), pay(p);
      for (int r = 0; r < p; ++r) {
        raw[r] = toType(activations(rows, R, r == 1 ? "outlier_channels" : "normal", 20 + r), dt);
        pay[r].resize(c->encodedBytes(n, dt));
        c->encode(raw[r].data(), dt, n, pay[r].data());
      }
      const int self = 1;
      // reference: acc in fp32, rank order, first term assigned, self raw; scaled; encoded as fp32
      std::vector<float> acc(n), tmp(n);
      const std::vector<float> selfF = fromType(raw[self], dt, n);
      for (int r = 0; r < p; ++r) {
        std::vector<float> term = selfF;
        if (r != self) c->decode(pay[r].data(), n, cocclFloat32, term.data());
        for (size_t i = 0; i < n; ++i) acc[i] = r == 0 ? term[i] : acc[i] + term[i];
      }
      if (scale != 1.0f)
        for (float& v : acc) v *= scale;
      std::vector<uint8_t> want(c->encodedBytes(n, dt)), got(want.size());
      c->encode(acc.data(), cocclFloat32, n, want.data());
      std::vector<uint8_t> wantDec(raw[0].size()), gotDec(raw[0].size());
      c->decode(want.data(), n, dt, wantDec.data());
      const void* ins[p] = {pay[0].data(), nullptr, pay[2].data()};
      std::vector<float> scratch(n);
      c->decodeReduceEncode(ins, p, self, raw[self].data(), dt, n, scale, got.data(),
                            scratch.data(), gotDec.data());
      EXPECT_EQ(got, want) << typeName(dt) << " scale " << scale;
      EXPECT_EQ(gotDec, wantDec) << typeName(dt) << " scale " << scale;
      // decodeAccumulate: acc += decode, in fp32
      std::vector<float> a(n, 0.5f), d(n);
      c->decodeAccumulate(pay[2].data(), n, dt, a.data());
      c->decode(pay[2].data(), n, cocclFloat32, d.data());
      for (size_t i = 0; i < n; i += 97) ASSERT_EQ(a[i], 0.5f + d[i]);
    }
}

// A count that is not a multiple of row: strict=0 pads the last row (the ABI's partial block);
// strict=1 (the default) refuses it: encodedBytes 0 and E_INVALID, which coccl raises as
// cocclInvalidArgument naming the codec and the operation.
TEST(Tah, PartialRowsPaddedOrRefused) {
  auto c = tahCodec("tah:row=1024,strict=0");
  const size_t n = 5 * 1024 + 333;
  std::vector<float> x = activations(6, 1024, "normal", 30);
  x.resize(n);
  EXPECT_EQ(c->encodedBytes(n, cocclFloat32), formulaBytes(6 * 1024, 1024, 0.2));
  std::vector<uint8_t> pay(c->encodedBytes(n, cocclFloat32));
  std::vector<float> d(n + 16, 12345.0f);
  c->encode(x.data(), cocclFloat32, n, pay.data());
  c->decode(pay.data(), n, cocclFloat32, d.data());
  for (size_t i = n; i < d.size(); ++i) ASSERT_EQ(d[i], 12345.0f) << "decode wrote past count";
  double amax = 0;
  for (size_t i = 5 * 1024; i < n; ++i) amax = std::max(amax, std::fabs(double(x[i])));
  for (size_t i = 5 * 1024; i < n; ++i)
    ASSERT_LE(std::fabs(double(d[i]) - x[i]), c->elementErrorBound(1, amax));

  auto s = tahCodec("tah:row=1024");
  EXPECT_EQ(s->encodedBytes(n, cocclFloat32), 0u);
  EXPECT_EQ(s->encodedBytes(5 * 1024, cocclFloat32), formulaBytes(5 * 1024, 1024, 0.2));
  try {
    s->encode(x.data(), cocclFloat32, n, pay.data());
    ADD_FAILURE() << "the default (strict=1) accepted a partial row";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), cocclInvalidArgument);
    const std::string m = e.what();
    EXPECT_NE(m.find("tah"), std::string::npos) << m;
    EXPECT_NE(m.find("encode"), std::string::npos) << m;
    EXPECT_NE(m.find("COCCL_CODEC_E_INVALID"), std::string::npos) << m;
  }
}

// Garbage payloads of the right length decode without crashing (values unspecified).
TEST(Tah, GarbagePayloadsAreSafe) {
  auto c = tahCodec("tah:row=1024,strict=0");
  const size_t n = 9 * 1024 + 5;
  std::mt19937 g(5);
  std::vector<uint8_t> pay(c->encodedBytes(n, cocclBfloat16));
  std::vector<uint16_t> out(n);
  for (int rep = 0; rep < 20; ++rep) {
    for (auto& b : pay) b = static_cast<uint8_t>(g());
    if (rep % 2) std::memset(pay.data(), 0xff, 8 * ((n / 1024 + 32) / 32));  // all rows 3-bit
    c->decode(pay.data(), n, cocclBfloat16, out.data());
  }
}

}  // namespace
}  // namespace coccl
