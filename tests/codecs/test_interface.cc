// The Codec contract: sizes, exact writes, guards, determinism, chunking, accumulation and the
// fused owner step, for every codec.
#include <gtest/gtest.h>

#include <cstring>

#include "codec_test_util.h"
#include "codecs/fp8_ash_ds/ash_block.h"
#include "codecs/int8/int8_block.h"
#include "core/error.h"

namespace coccl {
namespace test {
namespace {

const cocclDataType_t kTypes[] = {cocclFloat32, cocclBfloat16, cocclFloat16};
const size_t kCounts[] = {1, 7, 31, 33, 127, 129, 2305, 100003};

std::vector<std::string> allSpecs() {
  std::vector<std::string> s = lossySpecs();
  s.push_back("none");
  return s;
}

TEST(Interface, EncodedBytesFormulaAndExactWrites) {
  for (const std::string& spec : allSpecs()) {
    CodecPtr c = makeCodec(spec);
    for (cocclDataType_t dt : kTypes) {
      for (size_t n : kCounts) {
        size_t g = c->blockElems();
        size_t want = c->lossless() ? n * elemSize(dt) : (n + g - 1) / g * (g + 4);
        ASSERT_EQ(c->encodedBytes(n, dt), want) << spec;
        // the payload geometry (every size computation's formula) says the same
        ASSERT_EQ(
            codecGeometry(c->deviceDesc(), static_cast<int32_t>(elemSize(dt))).payloadBytes(n),
            want)
            << spec;
        Typed t = makeTyped(synth(Dist::Laplace, n, n), dt);
        // two different fills: identical bytes in [0, want) means every byte was written;
        // the 64 guard bytes after it keep the fill
        std::vector<uint8_t> a(want + 64, 0xa5), b(want + 64, 0x5a);
        c->encode(t.data(), dt, n, a.data());
        c->encode(t.data(), dt, n, b.data());
        ASSERT_TRUE(std::equal(a.begin(), a.begin() + want, b.begin())) << spec << " n=" << n;
        for (size_t i = want; i < want + 64; ++i) {
          ASSERT_EQ(a[i], 0xa5) << spec << " n=" << n;
          ASSERT_EQ(b[i], 0x5a) << spec << " n=" << n;
        }
      }
    }
    EXPECT_EQ(c->encodedBytes(0, cocclFloat32), 0u);
    c->encode(nullptr, cocclFloat32, 0, nullptr);  // count 0: no-op
  }
}

TEST(Interface, DecodeNeverWritesPastCount) {
  for (const std::string& spec : allSpecs()) {
    CodecPtr c = makeCodec(spec);
    for (cocclDataType_t dt : kTypes) {
      for (size_t n : kCounts) {
        Typed t = makeTyped(synth(Dist::Normal, n, 3 * n), dt);
        std::vector<uint8_t> payload = encodeAll(*c, t.data(), dt, n);
        const size_t es = elemSize(dt), guard = 64;
        std::vector<uint8_t> out((n + guard) * es, 0xc3);
        c->decode(payload.data(), n, dt, out.data());
        for (size_t i = n * es; i < out.size(); ++i) ASSERT_EQ(out[i], 0xc3) << spec << " n=" << n;
        std::vector<float> acc(n + guard, 7.0f);
        c->decodeAccumulate(payload.data(), n, dt, acc.data());
        for (size_t i = n; i < acc.size(); ++i) ASSERT_EQ(acc[i], 7.0f) << spec << " n=" << n;
      }
    }
  }
}

TEST(Interface, DeterministicAndChunkableAtBlockBoundaries) {
  for (const std::string& spec : lossySpecs()) {
    CodecPtr c = makeCodec(spec);
    const size_t g = c->blockElems(), n = 37 * g + 11;
    Typed t = makeTyped(synth(Dist::StudentT3, n, 99), cocclBfloat16);
    std::vector<uint8_t> whole = encodeAll(*c, t.data(), t.dt, n);
    EXPECT_EQ(whole, encodeAll(*c, t.data(), t.dt, n)) << spec;
    const size_t nb = (n + g - 1) / g;
    // chunks of 5 blocks: each chunk's payload holds the same codes and scale words
    for (size_t b0 = 0; b0 < nb; b0 += 5) {
      size_t first = b0 * g, cnt = std::min(5 * g, n - first);
      std::vector<uint8_t> part = encodeAll(*c, t.bytes.data() + first * 2, t.dt, cnt);
      size_t pb = (cnt + g - 1) / g;
      for (size_t b = 0; b < pb; ++b) {
        ASSERT_EQ(0, std::memcmp(part.data() + b * g, whole.data() + (b0 + b) * g, g)) << spec;
        ASSERT_EQ(
            0, std::memcmp(part.data() + pb * g + 4 * b, whole.data() + nb * g + 4 * (b0 + b), 4))
            << spec;
      }
    }
  }
}

TEST(Interface, DecodeAccumulateIsAccPlusDecode) {
  for (const std::string& spec : allSpecs()) {
    CodecPtr c = makeCodec(spec);
    for (cocclDataType_t dt : kTypes) {
      const size_t n = 5000;
      Typed t = makeTyped(synth(Dist::Laplace, n, 5), dt);
      std::vector<uint8_t> payload = encodeAll(*c, t.data(), dt, n);
      std::vector<float> dec = decodeF32(*c, payload, n, dt);
      std::vector<float> acc = synth(Dist::Normal, n, 6), want(n);
      for (size_t i = 0; i < n; ++i) want[i] = acc[i] + dec[i];
      c->decodeAccumulate(payload.data(), n, dt, acc.data());
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(bitsOf(acc[i]), bitsOf(want[i])) << spec << " " << i;
    }
  }
}

// Whether a codec forms the owner step's sum of dt in the rotated domain (codec.h,
// decodeReduceEncode; src/codecs/fp8_ash_ds/ash_block.h).
bool rotatedOwnerStep(const Codec& c, cocclDataType_t dt) {
  return std::string(c.name()) == "fp8_ash_ds" &&
         kmath::ashRotatedReduceFor(static_cast<int>(elemSize(dt)));
}

// Whether a codec splits the owner step's sum (int8 with rotate=1 or auto: int8_block.h).
bool splitOwnerStep(const Codec& c) {
  return std::string(c.name()) == "int8" && kmath::int8SplitSum(c.deviceDesc().rotate);
}

// decodeReduceEncode == decode/decodeAccumulate in rank order, scale, encode(fp32), decode.
// For the rotated owner step (fp8_ash_ds) and the split one (int8): decoded == decode(out), and
// the whole result is as close to the exact fp64 sum as the composition's (the sum is the same
// real number in another fp32 order); fp8_ash_ds's partial last block still is that
// composition bit for bit. (test_int8_split_sum.cc checks the split order itself.)
TEST(Interface, DecodeReduceEncodeEqualsExplicitComposition) {
  for (const std::string& spec : allSpecs()) {
    CodecPtr c = makeCodec(spec);
    const size_t g = c->blockElems();
    for (cocclDataType_t dt : kTypes) {
      const bool rotated = rotatedOwnerStep(*c, dt), split = splitOwnerStep(*c);
      for (size_t n : {size_t(1), size_t(300), size_t(4099)}) {
        const int p = 4;
        std::vector<Typed> raw;
        std::vector<std::vector<uint8_t>> enc;
        for (int r = 0; r < p; ++r) {
          raw.push_back(makeTyped(synth(Dist::StudentT3, n, 100 + r), dt));
          enc.push_back(encodeAll(*c, raw[r].data(), dt, n));
        }
        for (int self = 0; self < p; ++self) {
          for (float scale : {1.0f, 1.0f / p}) {
            SCOPED_TRACE(spec + " " + dtName(dt) + " n=" + std::to_string(n) +
                         " self=" + std::to_string(self) + " scale=" + std::to_string(scale));
            std::vector<float> acc(n, 0.0f);
            std::vector<double> exact(n, 0.0);
            for (int r = 0; r < p; ++r) {
              std::vector<float> term =
                  r == self ? std::vector<float>(raw[r].exact.begin(), raw[r].exact.end())
                            : decodeF32(*c, enc[r], n, dt);
              for (size_t i = 0; i < n; ++i) acc[i] = r == 0 ? term[i] : acc[i] + term[i];
              for (size_t i = 0; i < n; ++i) exact[i] += raw[r].exact[i] * scale;
            }
            if (scale != 1.0f)
              for (float& a : acc) a = a * scale;
            std::vector<uint8_t> wantOut;
            std::vector<uint8_t> wantDec(n * elemSize(dt));
            if (c->lossless()) {  // none: the payload is acc rounded to dt
              Typed r = makeTyped(acc, dt);
              wantOut = r.bytes;
            } else {
              wantOut = encodeAll(*c, acc.data(), cocclFloat32, n);
            }
            c->decode(wantOut.data(), n, dt, wantDec.data());

            std::vector<const void*> ins(p);
            for (int r = 0; r < p; ++r) ins[r] = r == self ? nullptr : enc[r].data();
            std::vector<uint8_t> out(c->encodedBytes(n, dt) + 16, 0xee), dec(n * elemSize(dt));
            std::vector<float> scratch(n);
            c->decodeReduceEncode(ins.data(), p, self, raw[self].data(), dt, n, scale, out.data(),
                                  scratch.data(), dec.data());
            ASSERT_EQ(out.back(), 0xee);
            if (!rotated && !split) {
              ASSERT_TRUE(std::equal(wantOut.begin(), wantOut.end(), out.begin()));
              ASSERT_EQ(dec, wantDec);
            } else {
              // the partial last block (codes and scale word) is the linear composition's
              const size_t nb = (n + g - 1) / g, last = nb - 1;
              if (rotated && n % g != 0) {
                ASSERT_TRUE(std::equal(wantOut.begin() + last * g, wantOut.begin() + nb * g,
                                       out.begin() + last * g));
                ASSERT_TRUE(std::equal(wantOut.begin() + nb * g + 4 * last,
                                       wantOut.begin() + nb * g + 4 * nb,
                                       out.begin() + nb * g + 4 * last));
              }
              std::vector<uint8_t> redecoded(n * elemSize(dt));
              c->decode(out.data(), n, dt, redecoded.data());
              ASSERT_EQ(dec, redecoded);
              const double errLinear = relL2(decodeF32(*c, wantOut, n), exact);
              const double errRotated = relL2(decodeF32(*c, out, n), exact);
              EXPECT_LE(errRotated, errLinear * 1.02 + 1e-6);
            }
            // in place: decoded written over the owner's own input
            std::vector<uint8_t> inplace = raw[self].bytes, out2(out.size(), 0xee);
            c->decodeReduceEncode(ins.data(), p, self, inplace.data(), dt, n, scale, out2.data(),
                                  scratch.data(), inplace.data());
            ASSERT_EQ(out2, out);
            ASSERT_EQ(inplace, dec);
          }
        }
      }
    }
  }
}

TEST(Interface, AvgScaleGivesTheMean) {
  for (const std::string& spec : allSpecs()) {
    CodecPtr c = makeCodec(spec);
    const size_t n = 4096;
    const int p = 4;
    std::vector<Typed> raw;
    std::vector<std::vector<uint8_t>> enc;
    std::vector<double> mean(n, 0.0);
    for (int r = 0; r < p; ++r) {
      raw.push_back(makeTyped(synth(Dist::Normal, n, 200 + r), cocclFloat32));
      enc.push_back(encodeAll(*c, raw[r].data(), cocclFloat32, n));
      for (size_t i = 0; i < n; ++i) mean[i] += raw[r].exact[i] / p;
    }
    std::vector<const void*> ins = {nullptr, enc[1].data(), enc[2].data(), enc[3].data()};
    std::vector<uint8_t> out(c->encodedBytes(n, cocclFloat32));
    std::vector<float> dec(n), scratch(n);
    c->decodeReduceEncode(ins.data(), p, 0, raw[0].data(), cocclFloat32, n, 1.0f / p, out.data(),
                          scratch.data(), dec.data());
    double tol = c->lossless() ? 1e-6 : (spec.find("e5m2") != std::string::npos ? 0.1 : 0.05);
    EXPECT_LT(relL2(dec, mean), tol) << spec;
  }
}

// Spellings of one parameter value give one canonical spec (ranks compare specs): -0 is 0.
TEST(Interface, NegativeZeroParameterIsZero) {
  EXPECT_EQ(makeCodec("fp8_ash_ds:lambda=-0")->spec(), makeCodec("fp8_ash_ds:lambda=0")->spec());
  EXPECT_EQ(makeCodec("fp8_ash_ds:lambda=-0.0")->spec().find("lambda=-"), std::string::npos);
}

TEST(Interface, PropertiesAndTypes) {
  for (const std::string& spec : allSpecs()) {
    CodecPtr c = makeCodec(spec);
    EXPECT_TRUE(c->supportsOp(cocclSum) && c->supportsOp(cocclAvg)) << spec;
    EXPECT_FALSE(c->supportsOp(cocclMax) || c->supportsOp(cocclProd) || c->supportsOp(cocclMin));
    for (cocclDataType_t dt : kTypes) EXPECT_TRUE(c->supportsType(dt)) << spec;
    EXPECT_EQ(c->formatVersion(), std::string(c->name()) == "int8" ? 2u : 1u) << spec;
    EXPECT_EQ(makeCodec(c->spec())->spec(), c->spec()) << "canonical spec re-parses";
    if (c->lossless()) continue;
    EXPECT_FALSE(c->supportsType(cocclInt32));
    EXPECT_FALSE(c->supportsType(cocclFloat64));
    int32_t x[4] = {1, 2, 3, 4};
    std::vector<uint8_t> out(1024);
    try {
      c->encode(x, cocclInt32, 4, out.data());
      ADD_FAILURE() << spec << " encoded int32";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), cocclInvalidArgument);
    }
  }
  CodecPtr none = makeCodec("none");
  EXPECT_TRUE(none->supportsType(cocclInt32) && none->supportsType(cocclFloat64));
  int64_t v[3] = {-1, 5, 1LL << 40}, w[3] = {};
  std::vector<uint8_t> out(none->encodedBytes(3, cocclInt64));
  ASSERT_EQ(out.size(), 24u);
  none->encode(v, cocclInt64, 3, out.data());
  none->decode(out.data(), 3, cocclInt64, w);
  EXPECT_EQ(0, std::memcmp(v, w, sizeof(v)));
}

TEST(Interface, CanonicalSpecs) {
  EXPECT_EQ(makeCodec("none")->spec(), "none");
  EXPECT_EQ(makeCodec("int8")->spec(), "int8:block=128,rotate=auto");
  EXPECT_EQ(makeCodec("int8:rotate=1")->spec(), "int8:block=128,rotate=1");
  EXPECT_EQ(makeCodec("int8:rotate=auto")->formatVersion(), 2u);
  EXPECT_EQ(makeCodec(" int8 : rotate = 0 , block=64")->spec(), "int8:block=64,rotate=0");
  EXPECT_EQ(makeCodec("fp8_ash_ds")->spec(),
            "fp8_ash_ds:block=128,format=e4m3,lambda=1e-06,alpha_min=0.001,alpha_max=1000");
  EXPECT_EQ(makeCodec("fp8_ash_ds:rotate=0")->spec(),
            "fp8_ash_ds:block=128,format=e4m3,lambda=1e-06,alpha_min=0.001,alpha_max=1000,rotate=0");
  EXPECT_EQ(makeCodec("fp8_ash_ds:rotate=1")->spec(), makeCodec("fp8_ash_ds")->spec());
  EXPECT_THROW(makeCodec("fp8_ash_ds:rotate=0,format=e5m2"), Error);
  EXPECT_THROW(makeCodec("fp8_ash_ds:rotate=2"), Error);
  EXPECT_EQ(makeCodec("fp8_ash_ds:block=256,format=e5m2")->spec(),
            "fp8_ash_ds:block=256,format=e5m2,lambda=1e-06,alpha_min=0.001,alpha_max=1000");
  EXPECT_EQ(makeCodec("fp8_ash_ds:block=256")->blockElems(), 256u);
  EXPECT_STREQ(makeCodec("fp8_ash_ds")->name(), "fp8_ash_ds");
  EXPECT_EQ(codecNames().rfind("none, int8, fp8_ash_ds", 0), 0u) << codecNames();  // built-ins first
}

TEST(Interface, DeviceDescMatchesTheSpec) {
  CodecDesc n = makeCodec("none")->deviceDesc();
  EXPECT_EQ(n.kind, CodecKind::None);
  EXPECT_EQ(n.block, 1);
  CodecDesc i = makeCodec("int8:block=64,rotate=0")->deviceDesc();
  EXPECT_EQ(i.kind, CodecKind::Int8);
  EXPECT_EQ(i.block, 64);
  EXPECT_EQ(i.rotate, 0);
  EXPECT_EQ(makeCodec("int8:rotate=1")->deviceDesc().rotate, 1);
  EXPECT_EQ(makeCodec("int8")->deviceDesc().rotate, 2);
  CodecDesc f = makeCodec("fp8_ash_ds:block=256,format=e5m2,lambda=0.5,alpha_max=64")->deviceDesc();
  EXPECT_EQ(f.kind, CodecKind::Fp8AshDs);
  EXPECT_EQ(f.block, 256);
  EXPECT_EQ(f.fp8E5M2, 1);
  EXPECT_EQ(f.lambda, 0.5f);
  EXPECT_EQ(f.alphaMin, 1e-3f);
  EXPECT_EQ(f.alphaMax, 64.0f);
  EXPECT_EQ(codecPayloadBytes(f, 1000),
            makeCodec("fp8_ash_ds:block=256")->encodedBytes(1000, cocclBfloat16));
}

TEST(Interface, PayloadGeometryIsTheHandFormula) {
  for (const char* spec : {"int8:block=32", "int8:block=512,rotate=0", "fp8_ash_ds:block=128",
                           "fp8_ash_ds:block=64,format=e5m2"}) {
    const CodecDesc d = makeCodec(spec)->deviceDesc();
    const PayloadGeometry geo = codecGeometry(d);
    const uint64_t g = static_cast<uint64_t>(d.block);
    EXPECT_TRUE(geo.valid()) << spec;
    EXPECT_EQ(geo.codeBits, 8) << spec;
    EXPECT_EQ(geo.metaBytes, 4) << spec;
    EXPECT_EQ(geo.block, d.block) << spec;
    for (uint64_t n : {0, 1, 31, 33, 129, 100003}) {
      const uint64_t nb = (n + g - 1) / g;
      EXPECT_EQ(geo.blocks(n), nb) << spec;
      EXPECT_EQ(geo.payloadBytes(n), nb * (g + 4)) << spec;
      EXPECT_EQ(geo.metaOffset(nb), nb * g) << spec;
      if (nb > 0) {
        EXPECT_EQ(geo.metaAt(nb, nb - 1), nb * g + 4 * (nb - 1)) << spec;
      }
    }
    // the planner's and the NCCL path's "whole blocks whose payload fits B bytes"
    for (uint64_t bytes : {uint64_t(0), g + 3, g + 4, uint64_t(1000), uint64_t(1) << 20}) {
      EXPECT_EQ(geo.elemsFitting(bytes), bytes / (g + 4) * g) << spec;
      EXPECT_LE(geo.payloadBytes(geo.elemsFitting(bytes)), bytes) << spec;
    }
  }
  EXPECT_EQ(codecGeometry(makeCodec("none")->deviceDesc(), 2).payloadBytes(7), 14u);
}

TEST(Interface, BadSpecsThrowInvalidArgument) {
  for (const char* bad :
       {"", "bogus", "int8:block=100", "int8:block=abc", "int8:foo=1", "int8:rotate=2",
        "int8:block=", "int8:block", "int8:block=64,block=64", "none:block=128",
        "fp8_ash_ds:format=e3m4", "fp8_ash_ds:lambda=-1", "fp8_ash_ds:alpha_min=0",
        "fp8_ash_ds:alpha_min=10,alpha_max=1", "fp8_ash_ds:lambda=nan", "FP8_ASH_DS",
        "fp8_ash_ds:block=128,", ":block=128"}) {
    try {
      makeCodec(bad);
      ADD_FAILURE() << "'" << bad << "' parsed";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), cocclInvalidArgument) << bad;
      EXPECT_NE(std::string(e.what()).find("codec spec"), std::string::npos) << e.what();
    }
  }
  try {
    makeCodec("int8:block=100");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("block must be one of 32, 64, 128, 256, 512"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace test
}  // namespace coccl
