// The shim's own declarations of the NCCL ABI (src/transport/nccl/nccl_abi.h) against NVIDIA's
// nccl.h: every size, field offset and enum value must match. All checks are compile-time.
#include <nccl.h>

#include <cstddef>
#include <cstdio>

// Real values, before nccl_abi.h redefines the shared macro names.
constexpr int kRealVersion[3] = {NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH};
constexpr int kRealSplitNoColor = NCCL_SPLIT_NOCOLOR;
constexpr int kRealUniqueIdBytes = NCCL_UNIQUE_ID_BYTES;
static const ncclConfig_t kRealInit = NCCL_CONFIG_INITIALIZER;
#undef NCCL_MAJOR
#undef NCCL_MINOR
#undef NCCL_PATCH
#undef NCCL_VERSION
#undef NCCL_VERSION_CODE
#undef NCCL_UNIQUE_ID_BYTES
#undef NCCL_CONFIG_UNDEF_INT
#undef NCCL_CONFIG_UNDEF_PTR
#undef NCCL_SPLIT_NOCOLOR
#undef NCCL_UNDEF_FLOAT
#undef NCCL_CONFIG_INITIALIZER

namespace abi {
#include "nccl_abi.h"
}

#define SAME_SIZE(T) static_assert(sizeof(::T) == sizeof(abi::T), #T " size")
#define SAME_FIELD(T, f) static_assert(offsetof(::T, f) == offsetof(abi::T, f), #T "." #f)
#define SAME_VALUE(v) static_assert(static_cast<long>(::v) == static_cast<long>(abi::v), #v)

SAME_SIZE(ncclUniqueId);
SAME_SIZE(ncclConfig_t);
SAME_SIZE(ncclSimInfo_t);
SAME_SIZE(ncclResult_t);
SAME_SIZE(ncclRedOp_t);
SAME_SIZE(ncclDataType_t);
SAME_SIZE(ncclScalarResidence_t);
SAME_FIELD(ncclConfig_t, size);
SAME_FIELD(ncclConfig_t, magic);
SAME_FIELD(ncclConfig_t, version);
SAME_FIELD(ncclConfig_t, blocking);
SAME_FIELD(ncclConfig_t, cgaClusterSize);
SAME_FIELD(ncclConfig_t, minCTAs);
SAME_FIELD(ncclConfig_t, maxCTAs);
SAME_FIELD(ncclConfig_t, netName);
SAME_FIELD(ncclConfig_t, splitShare);
SAME_FIELD(ncclConfig_t, trafficClass);
SAME_FIELD(ncclConfig_t, commName);
SAME_FIELD(ncclConfig_t, collnetEnable);
SAME_FIELD(ncclConfig_t, CTAPolicy);
SAME_FIELD(ncclConfig_t, shrinkShare);
SAME_FIELD(ncclConfig_t, nvlsCTAs);
SAME_FIELD(ncclConfig_t, nChannelsPerNetPeer);
SAME_FIELD(ncclConfig_t, nvlinkCentricSched);
SAME_FIELD(ncclSimInfo_t, estimatedTime);
SAME_VALUE(ncclSuccess);
SAME_VALUE(ncclUnhandledCudaError);
SAME_VALUE(ncclSystemError);
SAME_VALUE(ncclInternalError);
SAME_VALUE(ncclInvalidArgument);
SAME_VALUE(ncclInvalidUsage);
SAME_VALUE(ncclRemoteError);
SAME_VALUE(ncclInProgress);
SAME_VALUE(ncclNumResults);
SAME_VALUE(ncclSum);
SAME_VALUE(ncclProd);
SAME_VALUE(ncclMax);
SAME_VALUE(ncclMin);
SAME_VALUE(ncclAvg);
SAME_VALUE(ncclNumOps);
SAME_VALUE(ncclMaxRedOp);
SAME_VALUE(ncclInt8);
SAME_VALUE(ncclUint8);
SAME_VALUE(ncclInt32);
SAME_VALUE(ncclUint32);
SAME_VALUE(ncclInt64);
SAME_VALUE(ncclUint64);
SAME_VALUE(ncclFloat16);
SAME_VALUE(ncclFloat32);
SAME_VALUE(ncclFloat64);
SAME_VALUE(ncclBfloat16);
SAME_VALUE(ncclFloat8e4m3);
SAME_VALUE(ncclFloat8e5m2);
SAME_VALUE(ncclNumTypes);
SAME_VALUE(ncclScalarDevice);
SAME_VALUE(ncclScalarHostImmediate);
static_assert(kRealSplitNoColor == NCCL_SPLIT_NOCOLOR, "NCCL_SPLIT_NOCOLOR");
static_assert(kRealUniqueIdBytes == NCCL_UNIQUE_ID_BYTES, "NCCL_UNIQUE_ID_BYTES");

int main() {
  // The config magic is only in the initializer.
  if (kRealInit.magic != NCCL_CONFIG_MAGIC) {
    std::printf("config magic 0x%x differs from the shim's 0x%x\n", kRealInit.magic,
                NCCL_CONFIG_MAGIC);
    return 1;
  }
  std::printf("nccl.h %d.%d.%d: the shim's ABI declarations match\n", kRealVersion[0],
              kRealVersion[1], kRealVersion[2]);
  return 0;
}
