#include "gpu_util.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <thread>

#include "coll_util.h"
#include "kernels/float_convert.h"
#include "kernels/fp8.h"

namespace coccl::test {

int gpuCount() {
  static int cached = -1;
  if (cached >= 0) return cached;
  if (access("/dev/nvidiactl", F_OK) != 0 && access("/dev/nvidia0", F_OK) != 0) {
    cached = 0;
    return 0;
  }
  pid_t pid = fork();
  if (pid == 0) {
    int n = 0;
    _exit(cudaGetDeviceCount(&n) == cudaSuccess ? std::min(n, 100) : 0);
  }
  int st = 0;
  cached = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 0;
  return cached;
}

bool gpuAvailable() { return gpuCount() > 0; }

void useDeviceOrExit(int dev, int rank) {
  if (cudaSetDevice(dev) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) {
    std::fprintf(stderr, "rank %d: cannot use CUDA device %d\n", rank, dev);
    _exit(2);
  }
}

void runGpuRanks(int n, const std::function<void(Rank&)>& body, const GpuRunOptions& opts) {
  RunOptions ro;
  ro.config = opts.config;
  ro.destroyComm = opts.destroyComm;
  ro.harnessTimeoutS = opts.harnessTimeoutS;
  runProcessRanks(
      n,
      [&opts](int r) {
        for (const auto& kv : opts.env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
        if (opts.ncclHostIdPerRank)
          setenv("NCCL_HOSTID", ("coccl-test-" + std::to_string(getppid()) + "-rank" +
                                 std::to_string(r)).c_str(), 1);
        useDeviceOrExit(opts.gpuPerRank ? r % std::max(gpuCount(), 1) : 0, r);
      },
      body, ro);
}

DevBuf::DevBuf(size_t bytes, uint8_t fill) : bytes_(bytes) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, bytes + 2 * kGuard), cudaSuccess);
  base_ = static_cast<char*>(p);
  if (!base_) return;
  EXPECT_EQ(cudaMemset(base_, kGuardByte, kGuard), cudaSuccess);
  EXPECT_EQ(cudaMemset(base_ + kGuard + bytes, kGuardByte, kGuard), cudaSuccess);
  this->fill(fill);
}

DevBuf::~DevBuf() {
  if (base_) cudaFree(base_);
}

void DevBuf::fill(uint8_t v) {
  if (bytes_) {
    EXPECT_EQ(cudaMemset(data(), v, bytes_), cudaSuccess);
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

void DevBuf::upload(const void* host, size_t bytes, size_t offset) {
  if (!bytes) return;
  EXPECT_LE(offset + bytes, bytes_);
  EXPECT_EQ(cudaMemcpy(data() + offset, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  // A pageable H2D cudaMemcpy may return before its DMA lands, and the tests' non-blocking
  // streams are not ordered after it: wait for the device.
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

std::vector<uint8_t> DevBuf::download(size_t bytes, size_t offset) const {
  std::vector<uint8_t> v(bytes);
  if (bytes) {
    EXPECT_EQ(cudaMemcpy(v.data(), data() + offset, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  }
  return v;
}

bool DevBuf::guardsIntact() const {
  std::vector<uint8_t> g(kGuard);
  for (size_t off : {size_t{0}, kGuard + bytes_}) {
    if (cudaMemcpy(g.data(), base_ + off, kGuard, cudaMemcpyDeviceToHost) != cudaSuccess)
      return false;
    for (uint8_t b : g)
      if (b != kGuardByte) return false;
  }
  return true;
}

::testing::AssertionResult sameBytes(const std::vector<uint8_t>& got,
                                     const std::vector<uint8_t>& want, size_t es) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes differ: " << got.size() << " vs " << want.size();
  if (std::memcmp(got.data(), want.data(), got.size()) == 0) return ::testing::AssertionSuccess();
  std::ostringstream os;
  size_t bad = 0;
  for (size_t i = 0; i < got.size() / es; ++i) {
    if (std::memcmp(&got[i * es], &want[i * es], es) == 0) continue;
    if (bad < 4) {
      os << " [elem " << i << ": got 0x";
      for (size_t k = es; k-- > 0;) os << std::hex << static_cast<int>(got[i * es + k]) << std::dec;
      os << " want 0x";
      for (size_t k = es; k-- > 0;) os << std::hex << static_cast<int>(want[i * es + k]) << std::dec;
      os << "]";
    }
    ++bad;
  }
  return ::testing::AssertionFailure() << bad << " of " << got.size() / es
                                       << " elements differ:" << os.str();
}

::testing::AssertionResult sameValues(const std::vector<uint8_t>& got,
                                      const std::vector<uint8_t>& want, cocclDataType_t dt) {
  const size_t es = elemSize(dt);
  if (got.size() != want.size() || (dt != cocclFloat32 && dt != cocclFloat64))
    return sameBytes(got, want, es);
  std::vector<uint8_t> g = got, w = want;
  for (size_t i = 0; i + es <= g.size(); i += es) {
    bool gn, wn;
    if (es == 4) {
      float a, b;
      std::memcpy(&a, &g[i], 4);
      std::memcpy(&b, &w[i], 4);
      gn = std::isnan(a);
      wn = std::isnan(b);
    } else {
      double a, b;
      std::memcpy(&a, &g[i], 8);
      std::memcpy(&b, &w[i], 8);
      gn = std::isnan(a);
      wn = std::isnan(b);
    }
    if (gn && wn) std::memcpy(&g[i], &w[i], es);
  }
  return sameBytes(g, w, es);
}

::testing::AssertionResult sameFloatsUpToZeroSign(const std::vector<uint8_t>& got,
                                                  const std::vector<uint8_t>& want,
                                                  cocclDataType_t dt) {
  const size_t es = elemSize(dt);
  if (got.size() != want.size()) return sameBytes(got, want, es);
  std::vector<uint8_t> g = got, w = want;
  for (size_t i = 0; i < g.size() / es; ++i) {
    // clear the sign of zeros on both sides
    auto zero = [&](std::vector<uint8_t>& v) {
      uint8_t* p = &v[i * es];
      bool z = true;
      for (size_t k = 0; k + 1 < es; ++k) z = z && p[k] == 0;
      if (z && (p[es - 1] & 0x7f) == 0) p[es - 1] = 0;
    };
    zero(g);
    zero(w);
  }
  return sameValues(g, w, dt);  // and NaN payloads aside
}

std::vector<uint8_t> randomInput(cocclDataType_t dt, size_t count, uint64_t seed, int rank) {
  const size_t es = elemSize(dt);
  std::vector<uint8_t> v(count * es);
  std::mt19937_64 gen(seed * 7919u + static_cast<uint64_t>(rank) * 104729u + 1);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (size_t i = 0; i < count; ++i) {
    if (gen() % 16 == 0) {
      uint64_t bits = gen();
      std::memcpy(&v[i * es], &bits, es);
      continue;
    }
    double x = normal(gen);
    if (!isFloat(dt)) x = std::round(x * 20.0);
    if (dt == cocclUint8 || dt == cocclUint32 || dt == cocclUint64) x = std::fabs(x);
    setElem(dt, v.data(), i, x);
  }
  return v;
}

std::vector<uint8_t> hostPattern(size_t n, cocclDataType_t dt, int a, int b) {
  std::vector<uint8_t> v(n * elemSize(dt));
  for (size_t i = 0; i < n; ++i) {
    // the same expression as fill_kernels.cu (small integers: exact in every type)
    const int x = (a % 9 - 4) * (1 + static_cast<int>(i % 3)) + b;
    setElem(dt, v.data(), i, static_cast<double>(x));
  }
  return v;
}

GpuRunOptions overNcclTransport(GpuRunOptions o) {
  o.harnessTimeoutS = std::max(o.harnessTimeoutS, 400);
  o.env.push_back({"COCCL_DEVICE_TRANSPORT", "nccl"});
  o.env.push_back({"NCCL_SOCKET_IFNAME", "lo"});
  o.env.push_back({"NCCL_NVLS_ENABLE", "0"});
  o.env.push_back({"NCCL_DEBUG", "WARN"});
  o.ncclHostIdPerRank = true;
  return o;
}

}  // namespace coccl::test
