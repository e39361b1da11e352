// GPU test helpers: skip without a device, device buffers, the real TP tensors.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codec_ref.h"

namespace coccl {
namespace test {

// Whether a CUDA device is usable (cudaGetDeviceCount checked once).
bool gpuAvailable();

#define COCCL_REQUIRE_GPU()                                               \
  do {                                                                    \
    if (!::coccl::test::gpuAvailable()) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

// Fails the test (throws) on a CUDA error; `what` names the call.
void cudaCheck(int err, const char* what);

// Device memory, filled with a byte pattern on creation (catches unwritten outputs).
class DevBuf {
 public:
  explicit DevBuf(size_t bytes, int fill = 0xa5);
  ~DevBuf();
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  DevBuf(DevBuf&& o) noexcept : p_(o.p_), n_(o.n_) {
    o.p_ = nullptr;
    o.n_ = 0;
  }

  static DevBuf from(const std::vector<uint8_t>& host, size_t extra = 0, size_t offset = 0);
  uint8_t* data() const { return p_; }
  size_t size() const { return n_; }
  std::vector<uint8_t> download(size_t offset, size_t bytes) const;
  std::vector<uint8_t> download() const { return download(0, n_); }

 private:
  uint8_t* p_ = nullptr;
  size_t n_ = 0;
};

void deviceSync();


}  // namespace test
}  // namespace coccl
