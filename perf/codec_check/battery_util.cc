#include "battery_util.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>

#include "core/dtype.h"
#include "kernels/float_convert.h"

namespace coccl {
namespace check {
namespace detail {

const cocclDataType_t kTypes[3] = {cocclFloat32, cocclFloat16, cocclBfloat16};

const char* typeName(cocclDataType_t dt) {
  return dt == cocclFloat32 ? "fp32" : (dt == cocclFloat16 ? "fp16" : "bf16");
}

size_t typeSize(cocclDataType_t dt) { return dtypeSize(dt); }

std::vector<uint8_t> toType(const std::vector<float>& v, cocclDataType_t dt) {
  std::vector<uint8_t> out(v.size() * typeSize(dt));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == cocclFloat32) {
      std::memcpy(&out[4 * i], &v[i], 4);
    } else {
      uint16_t h = dt == cocclBfloat16 ? kmath::floatToBf16(v[i]) : kmath::floatToFp16(v[i]);
      std::memcpy(&out[2 * i], &h, 2);
    }
  }
  return out;
}

float elemAt(const uint8_t* p, cocclDataType_t dt, size_t i) {
  if (dt == cocclFloat32) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  return dt == cocclBfloat16 ? kmath::bf16ToFloat(h) : kmath::fp16ToFloat(h);
}

std::vector<float> toFloat(const uint8_t* p, cocclDataType_t dt, size_t n) {
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = elemAt(p, dt, i);
  return out;
}

namespace {
uint8_t patternByte(size_t i, uint8_t flip) {
  return static_cast<uint8_t>((0xA5u + 0x3Bu * i) ^ flip);
}
}  // namespace

Guarded::Guarded(size_t bytes, uint8_t flip) : bytes_(bytes), flip_(flip), buf_(bytes + 2 * kGuard) {
  for (size_t i = 0; i < buf_.size(); ++i) buf_[i] = patternByte(i, flip);
}

std::string Guarded::guardDamage() const {
  for (size_t i = 0; i < kGuard; ++i) {
    if (buf_[kGuard - 1 - i] != patternByte(kGuard - 1 - i, flip_))
      return fmt("byte %zu before the buffer written", i + 1);
  }
  for (size_t i = 0; i < kGuard; ++i) {
    const size_t at = kGuard + bytes_ + i;
    if (buf_[at] != patternByte(at, flip_)) return fmt("byte %zu past the end written", i + 1);
  }
  return "";
}

bool refusesPartialBlocks(const Codec& c) {
  const size_t G = c.blockElems();
  if (G <= 1) return false;
  for (cocclDataType_t dt : kTypes)
    if (c.supportsType(dt)) return c.encodedBytes(G + 1, dt) == 0;
  return false;
}

size_t countFor(const Codec& c, size_t n) {
  const size_t G = c.blockElems();
  const bool refuses = refusesPartialBlocks(c);
  if (refuses) n = (n + G - 1) / G * G;
  for (cocclDataType_t dt : kTypes)
    if (n > 0 && c.supportsType(dt) && c.encodedBytes(n, dt) == 0)
      throw std::runtime_error(fmt("the codec refuses a count of %zu %s elements (encodedBytes 0), "
                                   "%s (blocks of %zu)", n, typeName(dt),
                                   refuses ? "a whole-block count, which it must take"
                                           : "although it takes partial blocks", G));
  return n;
}

const std::vector<std::string>& inputKinds() {
  static const std::vector<std::string> kKinds = {
      "normal",     "laplace",    "student_t3", "outlier_channels", "normal_mu0.5", "normal_mu1",
      "normal_mu4", "abs_normal", "relu",       "zero_blocks",      "tiny_blocks"};
  return kKinds;
}

std::vector<float> makeInput(const std::string& kind, size_t n, uint64_t seed, size_t G) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::exponential_distribution<float> ed(1.0f);
  std::student_t_distribution<float> td(3.0f);
  std::vector<float> v(n);
  G = std::max<size_t>(G, 1);
  for (size_t i = 0; i < n; ++i) {
    float x = nd(rng);
    if (kind == "laplace") {
      x = (rng() & 1) ? ed(rng) : -ed(rng);
    } else if (kind == "student_t3") {
      x = td(rng);
    } else if (kind == "outlier_channels") {
      const size_t ch = i % 1024;  // rows of 1024 channels, 4 of them x50
      if (ch == 3 || ch == 100 || ch == 517 || ch == 900) x *= 50.0f;
    } else if (kind == "normal_mu0.5") {
      x += 0.5f;
    } else if (kind == "normal_mu1") {
      x += 1.0f;
    } else if (kind == "normal_mu4") {
      x += 4.0f;
    } else if (kind == "abs_normal") {
      x = std::fabs(x);
    } else if (kind == "relu") {
      x = std::max(x, 0.0f);
    } else if (kind == "zero_blocks") {
      if ((i / G) % 2 == 0) x = 0.0f;
    } else if (kind == "tiny_blocks") {
      if ((i / G) % 2 == 0) x *= 1e-30f;
    }
    v[i] = x;
  }
  return v;
}

double ErrStats::relL2() const { return sumSqRef > 0 ? std::sqrt(sumSqErr / sumSqRef) : std::sqrt(sumSqErr); }

void ErrStats::merge(const ErrStats& o) {
  sumSqErr += o.sumSqErr;
  sumSqRef += o.sumSqRef;
  maxAbs = std::max(maxAbs, o.maxAbs);
  worstRatio = std::max(worstRatio, o.worstRatio);
  elems += o.elems;
  violations += o.violations;
  if (firstViolation.empty()) firstViolation = o.firstViolation;
}

void ErrStats::violate(const std::string& what) {
  ++violations;
  if (firstViolation.empty()) firstViolation = what;
}

void addErrors(const Codec& c, const std::vector<float>& exact, const std::vector<float>& got,
               const std::string& what, ErrStats& s) {
  const size_t G = std::max<size_t>(c.blockElems(), 1);
  const size_t n = exact.size();
  for (size_t b0 = 0; b0 < n; b0 += G) {
    const size_t b1 = std::min(n, b0 + G);
    double sq = 0, amax = 0;
    for (size_t i = b0; i < b1; ++i) {
      sq += static_cast<double>(exact[i]) * exact[i];
      amax = std::max(amax, std::fabs(static_cast<double>(exact[i])));
    }
    const double bound = c.elementErrorBound(std::sqrt(sq / static_cast<double>(G)), amax);
    for (size_t i = b0; i < b1; ++i) {
      const double x = exact[i], y = got[i];
      const double err = std::isfinite(y) ? std::fabs(y - x) : std::numeric_limits<double>::infinity();
      s.sumSqErr += err * err;
      s.sumSqRef += x * x;
      s.maxAbs = std::max(s.maxAbs, err);
      const double ratio = bound > 0 ? err / bound : (err > 0 ? std::numeric_limits<double>::infinity() : 0.0);
      s.worstRatio = std::max(s.worstRatio, ratio);
      if (!(err <= bound))
        s.violate(fmt("%s: element %zu: input %.9g decoded %.9g, error %.3g > bound %.3g",
                      what.c_str(), i, x, y, err, bound));
    }
  }
  s.elems += n;
}

void roundTrip(const Codec& c, const std::vector<float>& v, cocclDataType_t dt,
               const std::string& what, ErrStats& s) {
  const size_t n = v.size();
  const std::vector<uint8_t> in = toType(v, dt);
  Guarded pay(c.encodedBytes(n, dt), 0x00);
  c.encode(in.data(), dt, n, pay.data());
  std::string dmg = pay.guardDamage();
  if (!dmg.empty()) s.violate(what + ": encode: " + dmg);
  Guarded out(n * typeSize(dt), 0x00);
  c.decode(pay.data(), n, dt, out.data());
  dmg = out.guardDamage();
  if (!dmg.empty()) s.violate(what + ": decode: " + dmg);
  addErrors(c, toFloat(in.data(), dt, n), toFloat(out.data(), dt, n), what, s);
}

std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

std::string statsNumbers(const ErrStats& s) {
  return fmt("relL2 %.3f%%  maxAbs %.3g  err/bound %.2f  viol %zu/%zu", 100.0 * s.relL2(), s.maxAbs,
             s.worstRatio, s.violations, s.elems);
}

}  // namespace detail
}  // namespace check
}  // namespace coccl
