// tah on real pipeline-parallel tensors (tests/data/pp_activations, written by
// perf/scripts/capture_pp_activations.py): per-row relative error ||d - x|| / ||x|| and bits per
// element, with and without the pivot + Hadamard tiles; prints the table recorded in
// plugins/tah/README.md. Skips when the data is absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tah_test_util.h"

namespace coccl {
namespace {

struct RowErr {
  double median, p90, max, bits;
  size_t overBound;
};

RowErr measure(const CodecPtr& c, const std::vector<uint8_t>& in, size_t rows, size_t R) {
  const size_t n = rows * R;
  const std::vector<float> x = fromType(in, cocclBfloat16, n);
  std::vector<uint8_t> pay(c->encodedBytes(n, cocclBfloat16)), out(in.size());
  c->encode(in.data(), cocclBfloat16, n, pay.data());
  c->decode(pay.data(), n, cocclBfloat16, out.data());
  const std::vector<float> d = fromType(out, cocclBfloat16, n);
  std::vector<double> rel(rows);
  RowErr e{0, 0, 0, 8.0 * pay.size() / n, 0};
  for (size_t r = 0; r < rows; ++r) {
    double num = 0, den = 0, amax = 0;
    for (size_t i = r * R; i < (r + 1) * R; ++i) {
      num += (double(d[i]) - x[i]) * (double(d[i]) - x[i]);
      den += double(x[i]) * x[i];
      amax = std::max(amax, std::fabs(double(x[i])));
    }
    const double bound = c->elementErrorBound(0, amax);
    for (size_t i = r * R; i < (r + 1) * R; ++i)
      if (std::fabs(double(d[i]) - x[i]) > bound) ++e.overBound;
    rel[r] = den > 0 ? std::sqrt(num / den) : 0.0;
  }
  std::sort(rel.begin(), rel.end());
  e.median = rel[rows / 2];
  e.p90 = rel[rows * 9 / 10];
  e.max = rel.back();
  return e;
}

TEST(TahData, PipelineBoundaryTensors) {
  const std::string dir = TAH_DATA_DIR;
  std::ifstream mf(dir + "/manifest.json");
  if (!mf)
    GTEST_SKIP() << "no " << dir << "/manifest.json (perf/scripts/capture_pp_activations.py)";
  const nlohmann::json m = nlohmann::json::parse(mf);
  std::printf(
      "| tensor | rows x row | bits/elem | row rel. err median | p90 | max | "
      "had=0 median | had=0 max |\n|---|---|---|---|---|---|---|---|\n");
  for (const auto& t : m.at("tensors")) {
    const size_t rows = t.at("rows"), R = t.at("row");
    ASSERT_EQ(t.at("dtype"), "bf16");
    std::ifstream f(dir + "/" + t.at("file").get<std::string>(), std::ios::binary);
    ASSERT_TRUE(f) << t.at("file");
    std::vector<uint8_t> in(rows * R * 2);
    f.read(reinterpret_cast<char*>(in.data()), static_cast<std::streamsize>(in.size()));
    ASSERT_EQ(static_cast<size_t>(f.gcount()), in.size()) << t.at("file");
    const std::string spec = "tah:row=" + std::to_string(R);
    const RowErr a = measure(tahCodec(spec), in, rows, R);
    const RowErr b = measure(tahCodec(spec + ",had=0"), in, rows, R);
    std::printf("| %s | %zu x %zu | %.3f | %.4f | %.4f | %.4f | %.4f | %.4f |\n",
                t.at("file").get<std::string>().c_str(), rows, R, a.bits, a.median, a.p90, a.max,
                b.median, b.max);
    EXPECT_EQ(a.overBound, 0u) << t.at("file");
    EXPECT_LT(a.median, 0.15) << t.at("file");
    EXPECT_LE(a.median, b.median * 1.001) << t.at("file");
  }
}

}  // namespace
}  // namespace coccl
