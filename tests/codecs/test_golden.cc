// Golden payloads: FNV-1a hashes of the bytes every lossy codec produces for a fixed input
// (built from integer arithmetic only, so it is the same on every platform), and of their
// fp32 decode. A change here changes the wire format: bump the codec's formatVersion, then
// update the table (the failure message prints the new values). Also proves that the
// instruction-set clones of the host loops (AVX2 / baseline) give identical bytes: build with
// -DCOCCL_NO_CLONES and run this test.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <limits>

#include "codec_test_util.h"

namespace coccl {
namespace test {
namespace {

uint64_t fnv1a(const void* p, size_t n, uint64_t h = 1469598103934665603ull) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// Irwin-Hall(4) values with a few scaled outliers, special blocks and a partial last block.
std::vector<float> goldenInput() {
  const size_t n = 64 * 512 + 77;
  std::vector<float> v(n);
  uint64_t s = 0x2545f4914f6cdd1dull;
  auto next = [&s]() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return static_cast<float>(s >> 40) * 0x1p-24f;  // [0, 1), exact
  };
  for (size_t i = 0; i < n; ++i) {
    float x = (next() + next() + next() + next() - 2.0f) * 1.5f;
    if (i % 997 == 3) x *= 64.0f;
    v[i] = x;
  }
  for (size_t i = 512; i < 1024; ++i) v[i] = 0.0f;               // zero blocks
  for (size_t i = 1024; i < 1536; ++i) v[i] = v[i] * 0x1p-130f;  // tiny (RAW)
  v[2000] = std::numeric_limits<float>::quiet_NaN();
  v[2600] = std::numeric_limits<float>::infinity();
  v[2601] = -std::numeric_limits<float>::infinity();
  v[3000] = 3e38f;
  return v;
}

struct Golden {
  const char* spec;
  uint64_t payload[3];  // fp32, bf16, fp16 input
  uint64_t decoded;     // fp32 decode of the fp32-input payload
};

const Golden kGolden[] = {
#include "golden_hashes.inc"
};

TEST(Golden, PayloadBytesAreStable) {
  std::vector<float> v = goldenInput();
  const cocclDataType_t types[3] = {cocclFloat32, cocclBfloat16, cocclFloat16};
  std::string table;
  bool ok = true;
  for (const std::string& spec : lossySpecs()) {
    CodecPtr c = makeCodec(spec);
    uint64_t h[3], hd = 0;
    for (int t = 0; t < 3; ++t) {
      Typed in = makeTyped(v, types[t]);
      std::vector<uint8_t> p = encodeAll(*c, in.data(), types[t], in.size());
      h[t] = fnv1a(p.data(), p.size());
      if (t == 0) {
        std::vector<float> d = decodeF32(*c, p, in.size());
        hd = fnv1a(d.data(), d.size() * 4);
      }
    }
    char line[256];
    std::snprintf(line, sizeof(line),
                  "    {\"%s\", {0x%016" PRIx64 "ull, 0x%016" PRIx64 "ull, 0x%016" PRIx64
                  "ull}, 0x%016" PRIx64 "ull},\n",
                  spec.c_str(), h[0], h[1], h[2], hd);
    table += line;
    const Golden* g = nullptr;
    for (const Golden& e : kGolden)
      if (spec == e.spec) g = &e;
    ok = ok && g != nullptr && g->payload[0] == h[0] && g->payload[1] == h[1] &&
         g->payload[2] == h[2] && g->decoded == hd;
  }
  EXPECT_TRUE(ok) << "payload bytes changed; if intended, bump formatVersion and put this in "
                     "tests/codecs/golden_hashes.inc:\n"
                  << table;
}

}  // namespace
}  // namespace test
}  // namespace coccl
