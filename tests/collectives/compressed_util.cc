#include "compressed_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "coll_util.h"

namespace coccl::test {

RankData syntheticInput(cocclDataType_t dt, size_t count, int rank, uint64_t seed) {
  RankData d;
  const size_t es = elemSize(dt);
  d.bytes.resize(count * es);
  d.exact.resize(count);
  std::mt19937_64 gen(seed * 1000003u + static_cast<uint64_t>(rank));
  std::normal_distribution<double> normal(0.0, 1.0);
  for (size_t i = 0; i < count; ++i) {
    double v = normal(gen);
    if (i % 1024 == 17 || i % 1024 == 500) v *= 30.0;  // outlier channels
    setElem(dt, d.bytes.data(), i, v);
    d.exact[i] = getElem(dt, d.bytes.data(), i);
  }
  return d;
}

std::vector<double> toDoubles(cocclDataType_t dt, const void* buf, size_t count) {
  std::vector<double> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = getElem(dt, buf, i);
  return v;
}

double relL2(const std::vector<double>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double d = got[i] - want[i];
    num += d * d;
    den += want[i] * want[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

size_t outsideBound(cocclCodec_t codec, const std::vector<double>& want,
                    const std::vector<double>& got) {
  size_t g = 1;
  EXPECT_EQ(cocclCodecBlockElems(codec, &g), cocclSuccess);
  size_t bad = 0;
  for (size_t b = 0; b < want.size(); b += g) {
    const size_t e = std::min(want.size(), b + g);
    double sq = 0, mx = 0;
    for (size_t i = b; i < e; ++i) {
      sq += want[i] * want[i];
      mx = std::max(mx, std::fabs(want[i]));
    }
    double bound = 0;
    EXPECT_EQ(cocclCodecErrorBound(codec, std::sqrt(sq / static_cast<double>(g)), mx, &bound),
              cocclSuccess);
    for (size_t i = b; i < e; ++i)
      if (!(std::fabs(got[i] - want[i]) <= bound * (1 + 1e-6) + 1e-30)) ++bad;
  }
  return bad;
}

uint64_t hashBytes(const void* p, size_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

bool sameOnAllRanks(const Rank& r, uint64_t hash) {
  std::vector<uint64_t> all(r.nranks);
  EXPECT_EQ(cocclAllGather(&hash, all.data(), 1, cocclUint64, r.comm, nullptr), cocclSuccess);
  for (uint64_t h : all)
    if (h != all[0]) return false;
  return true;
}

CodecHandle::CodecHandle(const char* spec) {
  EXPECT_EQ(cocclCodecCreate(spec, &c), cocclSuccess) << spec << ": " << cocclGetLastError(nullptr);
}
CodecHandle::~CodecHandle() {
  if (c) cocclCodecDestroy(c);
}
size_t CodecHandle::block() const {
  size_t g = 0;
  EXPECT_EQ(cocclCodecBlockElems(c, &g), cocclSuccess);
  return g;
}
size_t CodecHandle::encoded(size_t n, cocclDataType_t dt) const {
  size_t b = 0;
  EXPECT_EQ(cocclCodecEncodedBytes(c, n, dt, &b), cocclSuccess);
  return b;
}
double CodecHandle::bound(double rms, double absmax) const {
  double b = 0;
  EXPECT_EQ(cocclCodecErrorBound(c, rms, absmax, &b), cocclSuccess);
  return b;
}

}  // namespace coccl::test
