// CUDA encode / decode against the host codecs, bit for bit: every codec variant (int8 with and
// without rotation, fp8_ash_ds E4M3 / E5M2), every block size, fp32 / fp16 / bf16, odd counts,
// edge blocks (NaN, +-Inf, zeros and -0.0, tiny and subnormal, huge), unaligned buffers, the
// None codec, argument errors and the unfused kernels. Skips without a GPU.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/error.h"
#include "gpu_test_util.h"
#include "kernels/device_codec.h"
#include "unfused_codec.h"

namespace coccl {
namespace test {
namespace {

const size_t kCounts[] = {1, 7, 31, 33, 127, 129, 2305, 1000003};

std::vector<uint8_t> devEncode(const CodecDesc& d, const std::vector<uint8_t>& in,
                               cocclDataType_t dt, size_t n, size_t inOffset = 0,
                               size_t outOffset = 0) {
  DevBuf din = DevBuf::from(in, 16, inOffset);
  const size_t bytes = kernels::payloadBytes(d, dt, n);
  DevBuf dout(bytes + outOffset + 64);
  kernels::encode(d, din.data() + inOffset, dt, n, dout.data() + outOffset, nullptr);
  std::vector<uint8_t> all = dout.download();
  for (size_t i = 0; i < outOffset; ++i) EXPECT_EQ(all[i], 0xa5) << "write before the payload";
  for (size_t i = outOffset + bytes; i < all.size(); ++i)
    EXPECT_EQ(all[i], 0xa5) << "write past the payload at " << i - outOffset;
  return std::vector<uint8_t>(all.begin() + outOffset, all.begin() + outOffset + bytes);
}

std::vector<uint8_t> devDecode(const CodecDesc& d, const std::vector<uint8_t>& payload, size_t n,
                               cocclDataType_t dt, size_t inOffset = 0, size_t outOffset = 0) {
  DevBuf din = DevBuf::from(payload, 16, inOffset);
  const size_t bytes = n * typeSize(dt);
  DevBuf dout(bytes + outOffset + 64);
  kernels::decode(d, din.data() + inOffset, n, dt, dout.data() + outOffset, nullptr);
  std::vector<uint8_t> all = dout.download();
  for (size_t i = outOffset + bytes; i < all.size(); ++i)
    EXPECT_EQ(all[i], 0xa5) << "write past the output at " << i - outOffset;
  return std::vector<uint8_t>(all.begin() + outOffset, all.begin() + outOffset + bytes);
}

TEST(GpuCodec, EncodeMatchesTheHostByteForByte) {
  COCCL_REQUIRE_GPU();
  for (const std::string& base : variantSpecs()) {
    for (int g : blockSizes()) {
      CodecPtr c = makeCodec(withBlock(base, g));
      const CodecDesc d = c->deviceDesc();
      for (cocclDataType_t dt : codecTypes()) {
        for (size_t n : kCounts) {
          SCOPED_TRACE(c->spec() + " " + typeName(dt) + " n=" + std::to_string(n));
          const std::vector<uint8_t> in = toTyped(edgeInput(n, g, 17 * n + g), dt);
          const std::vector<uint8_t> want = hostEncode(*c, in, dt, n);
          const std::vector<uint8_t> got = devEncode(d, in, dt, n);
          const long i = firstDiff(got, want);
          ASSERT_LT(i, 0) << describeDiff(got, want, i, n, g);
        }
      }
    }
  }
}

TEST(GpuCodec, DecodeMatchesTheHostBitForBit) {
  COCCL_REQUIRE_GPU();
  for (const std::string& base : variantSpecs()) {
    for (int g : blockSizes()) {
      CodecPtr c = makeCodec(withBlock(base, g));
      const CodecDesc d = c->deviceDesc();
      for (cocclDataType_t dt : codecTypes()) {
        for (size_t n : kCounts) {
          // payloads of every input type, decoded to every output type
          const std::vector<uint8_t> payload =
              hostEncode(*c, toTyped(edgeInput(n, g, 31 * n + g), dt), dt, n);
          for (cocclDataType_t ot : codecTypes()) {
            SCOPED_TRACE(c->spec() + " " + typeName(dt) + "->" + typeName(ot) +
                         " n=" + std::to_string(n));
            const std::vector<uint8_t> want = hostDecode(*c, payload, n, ot);
            const std::vector<uint8_t> got = devDecode(d, payload, n, ot);
            const long i = firstTypedDiff(got, want, ot, false);
            ASSERT_LT(i, 0) << "element " << i;
          }
        }
      }
    }
  }
}

TEST(GpuCodec, RandomInputsOfEveryScale) {
  COCCL_REQUIRE_GPU();
  for (const std::string& base : variantSpecs()) {
    CodecPtr c = makeCodec(withBlock(base, 128));
    const CodecDesc d = c->deviceDesc();
    for (cocclDataType_t dt : codecTypes()) {
      for (float scale : {1e-30f, 1e-6f, 1.0f, 1e4f, 1e30f}) {
        SCOPED_TRACE(c->spec() + " " + typeName(dt) + " scale " + std::to_string(scale));
        const size_t n = (1 << 20) + 77;
        const std::vector<uint8_t> in = toTyped(randomInput(n, 5, scale), dt);
        const std::vector<uint8_t> want = hostEncode(*c, in, dt, n);
        const std::vector<uint8_t> got = devEncode(d, in, dt, n);
        ASSERT_EQ(firstDiff(got, want), -1);
        ASSERT_EQ(firstTypedDiff(devDecode(d, want, n, dt), hostDecode(*c, want, n, dt), dt, false),
                  -1);
      }
    }
  }
}

TEST(GpuCodec, NonDefaultAshParameters) {
  COCCL_REQUIRE_GPU();
  for (const char* spec : {"fp8_ash_ds:lambda=0,alpha_min=1e-6,alpha_max=1e6",
                           "fp8_ash_ds:lambda=0.5,alpha_min=2,alpha_max=64,format=e5m2",
                           "fp8_ash_ds:alpha_min=1000,alpha_max=1000,block=512",
                           "fp8_ash_ds:rotate=0", "fp8_ash_ds:rotate=0,block=32,alpha_min=2"}) {
    CodecPtr c = makeCodec(spec);
    const CodecDesc d = c->deviceDesc();
    for (cocclDataType_t dt : codecTypes()) {
      SCOPED_TRACE(std::string(spec) + " " + typeName(dt));
      const size_t n = 100003;
      const std::vector<uint8_t> in = toTyped(edgeInput(n, d.block, 3), dt);
      const std::vector<uint8_t> want = hostEncode(*c, in, dt, n);
      ASSERT_EQ(firstDiff(devEncode(d, in, dt, n), want), -1);
      ASSERT_EQ(firstTypedDiff(devDecode(d, want, n, dt), hostDecode(*c, want, n, dt), dt, false),
                -1);
    }
  }
}

TEST(GpuCodec, UnalignedBuffers) {
  COCCL_REQUIRE_GPU();
  for (const std::string& base : variantSpecs()) {
    CodecPtr c = makeCodec(withBlock(base, 64));
    const CodecDesc d = c->deviceDesc();
    for (cocclDataType_t dt : codecTypes()) {
      const size_t n = 40000 + 3;
      const std::vector<uint8_t> in = toTyped(edgeInput(n, 64, 9), dt);
      const std::vector<uint8_t> want = hostEncode(*c, in, dt, n);
      for (size_t off : {1, 2, 4, 8}) {
        SCOPED_TRACE(c->spec() + " " + typeName(dt) + " offset " + std::to_string(off));
        const size_t typedOff = (off % typeSize(dt) == 0) ? off : typeSize(dt);
        ASSERT_EQ(firstDiff(devEncode(d, in, dt, n, typedOff, off), want), -1);
        ASSERT_EQ(firstTypedDiff(devDecode(d, want, n, dt, off, typedOff),
                                 hostDecode(*c, want, n, dt), dt, false),
                  -1);
      }
    }
  }
}

TEST(GpuCodec, ZeroCountIsANoOp) {
  COCCL_REQUIRE_GPU();
  const CodecDesc d = makeCodec("fp8_ash_ds")->deviceDesc();
  kernels::encode(d, nullptr, cocclBfloat16, 0, nullptr, nullptr);
  kernels::decode(d, nullptr, 0, cocclBfloat16, nullptr, nullptr);
  kernels::decodeAccumulate(d, nullptr, 1, 0, cocclBfloat16, nullptr, nullptr);
  deviceSync();
}

TEST(GpuCodec, BadArgumentsThrowInvalidArgument) {
  COCCL_REQUIRE_GPU();
  const CodecDesc d = makeCodec("int8")->deviceDesc();
  DevBuf a(1024), b(1024);
  auto code = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.code();
    }
    return cocclSuccess;
  };
  EXPECT_EQ(code([&] { kernels::encode(d, a.data(), cocclInt32, 10, b.data(), nullptr); }),
            cocclInvalidArgument);
  EXPECT_EQ(code([&] { kernels::encode(d, nullptr, cocclFloat32, 10, b.data(), nullptr); }),
            cocclInvalidArgument);
  CodecDesc bad = d;
  bad.block = 100;
  EXPECT_EQ(code([&] { kernels::encode(bad, a.data(), cocclFloat32, 10, b.data(), nullptr); }),
            cocclInvalidArgument);
  const void* ins[2] = {a.data(), nullptr};
  EXPECT_EQ(code([&] {
              kernels::decodeReduceEncode(d, ins, 2, 0, a.data(), cocclFloat32, 10, 1.0f, b.data(),
                                          nullptr, nullptr);
            }),
            cocclInvalidArgument);  // ins[1] null
  EXPECT_EQ(code([&] {
              kernels::decodeReduceEncode(d, ins, 65, 0, a.data(), cocclFloat32, 10, 1.0f, b.data(),
                                          nullptr, nullptr);
            }),
            cocclInvalidArgument);  // p > 64
}

TEST(GpuCodec, NoneCodecCopiesAndReduces) {
  COCCL_REQUIRE_GPU();
  CodecPtr c = makeCodec("none");
  const CodecDesc d = c->deviceDesc();
  for (cocclDataType_t dt : codecTypes()) {
    SCOPED_TRACE(typeName(dt));
    const size_t n = 10007;
    const std::vector<uint8_t> in = toTyped(edgeInput(n, 32, 4), dt);
    EXPECT_EQ(devEncode(d, in, dt, n), in);
    EXPECT_EQ(devDecode(d, in, n, dt), in);
    // decodeReduceEncode: p = 3, self = 1, AVG
    std::vector<std::vector<uint8_t>> ins = {toTyped(randomInput(n, 1), dt), in,
                                             toTyped(randomInput(n, 2), dt)};
    std::vector<uint8_t> wantOut, wantDec;
    hostReduce(*c, ins, 1, ins[1], dt, n, 1.0f / 3, &wantOut, &wantDec);
    DevBuf d0 = DevBuf::from(ins[0]), d1 = DevBuf::from(ins[1]), d2 = DevBuf::from(ins[2]);
    DevBuf out(n * typeSize(dt)), dec(n * typeSize(dt));
    const void* ptrs[3] = {d0.data(), nullptr, d2.data()};
    kernels::decodeReduceEncode(d, ptrs, 3, 1, d1.data(), dt, n, 1.0f / 3, out.data(), dec.data(),
                                nullptr);
    EXPECT_EQ(firstTypedDiff(out.download(), wantOut, dt, true), -1);
    EXPECT_EQ(firstTypedDiff(dec.download(), wantDec, dt, true), -1);
    // decodeAccumulate of two inputs
    std::vector<float> acc = randomInput(n, 8);
    std::vector<float> want = acc;
    c->decodeAccumulate(ins[0].data(), n, dt, want.data());
    c->decodeAccumulate(ins[2].data(), n, dt, want.data());
    std::vector<uint8_t> accBytes(n * 4);
    std::memcpy(accBytes.data(), acc.data(), n * 4);
    DevBuf dacc = DevBuf::from(accBytes);
    const void* two[2] = {d0.data(), d2.data()};
    kernels::decodeAccumulate(d, two, 2, n, dt, reinterpret_cast<float*>(dacc.data()), nullptr);
    std::vector<uint8_t> wantBytes(n * 4);
    std::memcpy(wantBytes.data(), want.data(), n * 4);
    EXPECT_EQ(firstTypedDiff(dacc.download(), wantBytes, cocclFloat32, true), -1);
  }
}

TEST(GpuCodec, UnfusedKernelsWriteTheSameBytes) {
  COCCL_REQUIRE_GPU();
  for (const char* base : {"fp8_ash_ds:format=e4m3", "fp8_ash_ds:format=e5m2"}) {
    for (int g : blockSizes()) {
      CodecPtr c = makeCodec(withBlock(base, g));
      const CodecDesc d = c->deviceDesc();
      for (cocclDataType_t dt : codecTypes()) {
        SCOPED_TRACE(c->spec() + " " + typeName(dt));
        const size_t n = 300007;
        const std::vector<uint8_t> in = toTyped(edgeInput(n, g, 55), dt);
        const std::vector<uint8_t> want = hostEncode(*c, in, dt, n);
        DevBuf din = DevBuf::from(in);
        DevBuf scratch(kernels::unfusedScratchBytes(d, n));
        DevBuf dout(want.size());
        kernels::encodeUnfused(d, din.data(), dt, n, dout.data(), scratch.data(), nullptr);
        ASSERT_EQ(firstDiff(dout.download(), want), -1);
        DevBuf dp = DevBuf::from(want);
        DevBuf dec(n * typeSize(dt));
        kernels::decodeUnfused(d, dp.data(), n, dt, dec.data(), scratch.data(), nullptr);
        ASSERT_EQ(firstTypedDiff(dec.download(), hostDecode(*c, want, n, dt), dt, false), -1);
      }
    }
  }
}

}  // namespace
}  // namespace test
}  // namespace coccl
