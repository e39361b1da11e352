// Co-residency of the collective kernels (residency.h).
#include "collectives/cuda_ipc/residency.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "collectives/cuda_ipc/launch.h"

namespace coccl {
namespace dev {
int residentBlocks(int device) {
  static std::mutex mu;
  static std::map<int, int> cache;
  std::lock_guard<std::mutex> lock(mu);
  const auto it = cache.find(device);
  if (it != cache.end()) return it->second;
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) sms = 0;
  int perSm = -1;
  for (const int n : {residentPerSmExact(), residentPerSmCodecBf16(), residentPerSmCodecFp16(),
                      residentPerSmCodecFp32()})
    perSm = perSm < 0 ? n : std::min(perSm, n);
  (void)cudaGetLastError();
  const int r = std::max(perSm, 0) * sms;
  cache[device] = r;
  return r;
}

int addCommBlocks(int device, int n) {
  static std::mutex mu;
  static std::map<int, int> used;
  std::lock_guard<std::mutex> lock(mu);
  return used[device] += n;
}

void removeCommBlocks(int device, int n) { (void)addCommBlocks(device, -n); }

}  // namespace dev
}  // namespace coccl
