// The codec registry and the descriptor-backed codecs (src/codecs/abi): the built-ins as ABI
// descriptors, the descriptor checks, name clashes, the bytes of the ABI route against the C++
// codecs, and decodeReduceEncode composed by coccl for a descriptor without it.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codecs/abi/abi_codec.h"
#include "codecs/abi/builtin.h"
#include "codecs/abi/registry.h"
#include "core/error.h"

namespace coccl {
namespace {

const cocclCodecPlugin_v1_t& builtin(const char* name) {
  for (const cocclCodecPlugin_v1_t* d : codec_detail::builtinDescriptors())
    if (std::strcmp(d->name, name) == 0) return *d;
  ADD_FAILURE() << "no built-in " << name;
  return *codec_detail::builtinDescriptors()[0];
}

std::string rejected(const cocclCodecPlugin_v1_t& d) { return validateDescriptor(&d); }

TEST(AbiRegistry, BuiltinsAreValidDescriptorsRegisteredFirst) {
  const std::vector<CodecEntry> all = registeredCodecs();
  ASSERT_GE(all.size(), 3u);
  EXPECT_STREQ(all[0].desc->name, "none");
  EXPECT_STREQ(all[1].desc->name, "int8");
  EXPECT_STREQ(all[2].desc->name, "fp8_ash_ds");
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(all[i].source, "built-in");
    EXPECT_EQ(validateDescriptor(all[i].desc), "") << all[i].desc->name;
    EXPECT_TRUE(all[i].desc->capabilities & COCCL_CODEC_CAP_DETERMINISTIC);
  }
  EXPECT_TRUE(builtin("none").capabilities & COCCL_CODEC_CAP_LOSSLESS);
  EXPECT_FALSE(builtin("int8").capabilities & COCCL_CODEC_CAP_LOSSLESS);
  EXPECT_EQ(builtin("int8").formatVersion, 2u);
  const std::string sig = registeredCodecsSignature();
  EXPECT_NE(sig.find("fp8_ash_ds@"), std::string::npos) << sig;
  EXPECT_NE(sig.find("int8@2"), std::string::npos) << sig;
  EXPECT_NE(sig.find("none@"), std::string::npos) << sig;
}

TEST(AbiRegistry, DescriptorChecksNameEachViolation) {
  cocclCodecPlugin_v1_t d = builtin("int8");
  d.name = "int8_copy";
  EXPECT_EQ(rejected(d), "");
  auto bad = [&](auto edit, const char* words) {
    cocclCodecPlugin_v1_t x = d;
    edit(x);
    const std::string why = rejected(x);
    EXPECT_NE(why.find(words), std::string::npos) << "'" << why << "' lacks '" << words << "'";
  };
  bad([](cocclCodecPlugin_v1_t& x) { x.structSize -= 8; }, "structSize");
  bad([](cocclCodecPlugin_v1_t& x) { x.abiVersion = 2; }, "abiVersion is 2");
  bad([](cocclCodecPlugin_v1_t& x) { x.name = "Bad-Name"; }, "name must be");
  bad([](cocclCodecPlugin_v1_t& x) { x.name = ""; }, "name must be");
  bad([](cocclCodecPlugin_v1_t& x) { x.dtypeMask = 0; }, "dtypeMask");
  bad([](cocclCodecPlugin_v1_t& x) { x.dtypeMask |= 1u << 20; }, "dtypeMask");
  bad([](cocclCodecPlugin_v1_t& x) { x.opMask = 1u << 9; }, "opMask");
  bad([](cocclCodecPlugin_v1_t& x) { x.capabilities &= ~COCCL_CODEC_CAP_DETERMINISTIC; },
      "DETERMINISTIC");
  bad([](cocclCodecPlugin_v1_t& x) { x.capabilities |= 1u << 12; }, "unknown capability");
  bad([](cocclCodecPlugin_v1_t& x) { x.create = nullptr; }, "required");
  bad([](cocclCodecPlugin_v1_t& x) { x.host.decode = nullptr; }, "required");
  bad([](cocclCodecPlugin_v1_t& x) { x.host.decodeReduceEncode = nullptr; },
      "decodeReduceEncode");
  bad([](cocclCodecPlugin_v1_t& x) {
        x.capabilities |= COCCL_CODEC_CAP_DEVICE;
        x.device = {};
      }, "four device operations");
  bad([](cocclCodecPlugin_v1_t& x) {
        x.capabilities &= ~COCCL_CODEC_CAP_DEVICE;
        x.device.encode = x.device.encode ? x.device.encode
                                          : [](const void*, const void*, int, size_t, void*, void*,
                                               cudaStream_t) { return 0; };
      }, "COCCL_CODEC_CAP_DEVICE is not");
  EXPECT_EQ(validateDescriptor(nullptr), "the descriptor is null");
}

TEST(AbiRegistry, NameClashAndBadDescriptorThrowNamingTheSource) {
  const cocclCodecPlugin_v1_t& d = builtin("int8");
  try {
    registerCodec(&d, "/tmp/libcoccl-codec-int8.so");
    FAIL() << "a second 'int8' registered";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), cocclInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("/tmp/libcoccl-codec-int8.so"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("registered already (by built-in)"), std::string::npos)
        << e.what();
  }
  static cocclCodecPlugin_v1_t broken = builtin("int8");
  broken.name = "broken_size";
  broken.structSize = 12;
  try {
    registerCodec(&broken, "test");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("structSize is 12"), std::string::npos) << e.what();
  }
}

// The ABI route gives the C++ codec's bytes, and a descriptor without decodeReduceEncode gets
// coccl's composition (fp32 input: bitwise the fused owner step, which encodes the fp32 sum).
TEST(AbiRegistry, AbiRouteBytesAndComposedDecodeReduceEncode) {
  static cocclCodecPlugin_v1_t nodre = builtin("int8");
  nodre.name = "int8_nodre_test";
  // without its own decodeReduceEncode it has no sum order of its own; rotate=0 is the int8
  // whose fused owner step keeps the composition's order (int8_block.h)
  nodre.capabilities &= ~(COCCL_CODEC_CAP_DECODE_REDUCE_ENCODE | COCCL_CODEC_CAP_OWN_SUM_ORDER);
  nodre.host.decodeReduceEncode = nullptr;
  registerCodec(&nodre, "test");
  CodecPtr fused = makeCodec("int8:block=64,rotate=0");
  CodecPtr composed = makeCodec("int8_nodre_test:block=64,rotate=0");
  ASSERT_NE(dynamic_cast<const AbiCodec*>(fused.get()), nullptr);
  ASSERT_NE(dynamic_cast<const AbiCodec*>(fused.get())->builtin(), nullptr);
  EXPECT_EQ(composed->spec(), "int8:block=64,rotate=0");  // the instance's own canonical spec
  const size_t n = 1000;  // a partial last block
  const int p = 4, self = 2;
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.5f, 1.0f);
  std::vector<std::vector<float>> x(p, std::vector<float>(n));
  std::vector<std::vector<uint8_t>> enc(p, std::vector<uint8_t>(fused->encodedBytes(n, cocclFloat32)));
  std::vector<const void*> ins(p);
  for (int r = 0; r < p; ++r) {
    for (float& v : x[r]) v = g(rng);
    fused->encode(x[r].data(), cocclFloat32, n, enc[r].data());
    std::vector<uint8_t> direct(enc[r].size());
    dynamic_cast<const AbiCodec*>(fused.get())->builtin()->encode(x[r].data(), cocclFloat32, n,
                                                                  direct.data());
    EXPECT_EQ(direct, enc[r]);
    ins[r] = enc[r].data();
  }
  std::vector<float> scratch(n);
  std::vector<uint8_t> a(enc[0].size()), b(enc[0].size());
  std::vector<float> da(n), db(n);
  fused->decodeReduceEncode(ins.data(), p, self, x[self].data(), cocclFloat32, n, 0.25f, a.data(),
                            scratch.data(), da.data());
  composed->decodeReduceEncode(ins.data(), p, self, x[self].data(), cocclFloat32, n, 0.25f,
                               b.data(), scratch.data(), db.data());
  EXPECT_EQ(a, b);
  EXPECT_EQ(0, std::memcmp(da.data(), db.data(), n * sizeof(float)));
}

TEST(AbiRegistry, UnknownCodecAndBadParamsKeepTheirMessages) {
  try {
    makeCodec("nosuchcodec");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown codec 'nosuchcodec'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("fp8_ash_ds"), std::string::npos);
  }
  try {
    makeCodec("int8:block=7");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), cocclInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("block"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace coccl
