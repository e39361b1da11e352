// Helpers of the codec battery (battery.cc, battery_accuracy.cc): guarded buffers, typed
// inputs, synthetic distributions and per-element error statistics.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "coccl.h"
#include "codecs/codec.h"

namespace coccl {
namespace check {
namespace detail {

// The input types every check runs (the codecs' floating-point inputs).
extern const cocclDataType_t kTypes[3];
const char* typeName(cocclDataType_t dt);
size_t typeSize(cocclDataType_t dt);

// v rounded to nearest-even into dt, as raw bytes.
std::vector<uint8_t> toType(const std::vector<float>& v, cocclDataType_t dt);
// Element i of typed bytes p, as fp32 (exact).
float elemAt(const uint8_t* p, cocclDataType_t dt, size_t i);
std::vector<float> toFloat(const uint8_t* p, cocclDataType_t dt, size_t n);

// A buffer of `bytes` bytes with kGuard guard bytes before and after it. Guards and body are
// filled with a pattern XOR flip: calling the same thing with flip 0x00 and 0xFF finds any write
// outside the body (guards changed under at least one pattern) and any body byte left unwritten
// (the two bodies differ).
class Guarded {
 public:
  static constexpr size_t kGuard = 64;
  Guarded(size_t bytes, uint8_t flip);
  uint8_t* data() { return buf_.data() + kGuard; }
  const uint8_t* data() const { return buf_.data() + kGuard; }
  float* floats() { return reinterpret_cast<float*>(data()); }
  size_t size() const { return bytes_; }
  // "" when both guards are intact, else which side was written and at what offset.
  std::string guardDamage() const;
  std::vector<uint8_t> body() const { return {data(), data() + bytes_}; }

 private:
  size_t bytes_;
  uint8_t flip_;
  std::vector<uint8_t> buf_;
};

// Violations of one check: counted, the first one kept.
struct Tally {
  size_t calls = 0, bad = 0;
  std::string first;
  void fail(const std::string& what) {
    ++bad;
    if (first.empty()) first = what;
  }
  void guards(const Guarded& g, const std::string& what) {
    const std::string d = g.guardDamage();
    if (!d.empty()) fail(what + ": " + d);
  }
};

// Whether c refuses counts that are not whole blocks (encodedBytes 0 for them:
// include/coccl_codec.h, "Blocks"; e.g. tah's default). The battery then runs every check on
// whole-block counts (countFor) and partial_blocks checks the refusal itself.
bool refusesPartialBlocks(const Codec& c);
// The count a check runs for a wanted n: n, or n rounded up to whole blocks for a codec that
// refuses partial ones. Throws (the check fails, naming the count) when c refuses that count.
size_t countFor(const Codec& c, size_t n);

// Synthetic inputs. Kinds: normal, laplace, student_t3, outlier_channels, normal_mu0.5,
// normal_mu1, normal_mu4, abs_normal, relu, zero_blocks, tiny_blocks. G is the codec's block
// (zero_blocks / tiny_blocks alternate such blocks with N(0,1) blocks).
const std::vector<std::string>& inputKinds();
std::vector<float> makeInput(const std::string& kind, size_t n, uint64_t seed, size_t G);

// Error of a decoded output against its exact input, element by element against
// c.elementErrorBound of its block (rms over G elements, zero padding included).
struct ErrStats {
  double sumSqErr = 0, sumSqRef = 0, maxAbs = 0, worstRatio = 0;
  size_t elems = 0, violations = 0;
  std::string firstViolation;
  double relL2() const;
  void merge(const ErrStats& o);
  void violate(const std::string& what);
};
void addErrors(const Codec& c, const std::vector<float>& exact, const std::vector<float>& got,
               const std::string& what, ErrStats& s);

// encode / decode of v in dt with guards on both buffers; errors into s (guard damage and
// unwritten bytes are violations too).
void roundTrip(const Codec& c, const std::vector<float>& v, cocclDataType_t dt,
               const std::string& what, ErrStats& s);

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string statsNumbers(const ErrStats& s);

}  // namespace detail
}  // namespace check
}  // namespace coccl
