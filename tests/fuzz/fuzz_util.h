// Helpers shared by the libFuzzer targets of tests/fuzz (README "Fuzzing").
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "coccl.h"

namespace coccl::fuzz {

// Reads the fuzzer's bytes front to back; past the end every read gives zeros.
class Input {
 public:
  Input(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  uint8_t u8() { return pos_ < n_ ? d_[pos_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint32_t u32() { return static_cast<uint32_t>(u16()) | (static_cast<uint32_t>(u16()) << 16); }
  uint64_t u64() { return static_cast<uint64_t>(u32()) | (static_cast<uint64_t>(u32()) << 32); }
  // Bytes left after what was read.
  const uint8_t* rest() const { return d_ + (pos_ < n_ ? pos_ : n_); }
  size_t restSize() const { return pos_ < n_ ? n_ - pos_ : 0; }
  // Copies n bytes from what is left, cycling through it (zeros when nothing is left), and
  // starting `skew` bytes in: different buffers of one input get different bytes.
  void fill(void* dst, size_t n, size_t skew = 0) const {
    uint8_t* o = static_cast<uint8_t*>(dst);
    const size_t m = restSize();
    const uint8_t* r = rest();
    for (size_t i = 0; i < n; ++i) o[i] = m ? r[(i + skew) % m] : 0;
  }

 private:
  const uint8_t* d_;
  size_t n_;
  size_t pos_ = 0;
};

// A heap buffer of exactly n bytes (n == 0: a 1-byte allocation the callee must not touch;
// ASan catches any access past n). Each byte starts as `fill`.
struct Buf {
  explicit Buf(size_t n, uint8_t fill = 0xA5) : n(n), p(new uint8_t[n ? n : 1]) {
    std::memset(p.get(), fill, n ? n : 1);
  }
  size_t n;
  std::unique_ptr<uint8_t[]> p;
  uint8_t* get() { return p.get(); }
  const uint8_t* get() const { return p.get(); }
};

// Whether element i of a dt buffer is a NaN (fp32, fp16, bf16; different NaN bits compare
// equal where a check compares outputs).
inline bool isNaNAt(cocclDataType_t dt, const uint8_t* p, size_t i) {
  switch (dt) {
    case cocclFloat32: {
      uint32_t b;
      std::memcpy(&b, p + 4 * i, 4);
      return (b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu);
    }
    case cocclFloat16: {
      uint16_t b;
      std::memcpy(&b, p + 2 * i, 2);
      return (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu);
    }
    case cocclBfloat16: {
      uint16_t b;
      std::memcpy(&b, p + 2 * i, 2);
      return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu);
    }
    default:
      return false;
  }
}

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "FUZZ CHECK FAILED: %s\n", what.c_str());
  std::abort();
}

}  // namespace coccl::fuzz
