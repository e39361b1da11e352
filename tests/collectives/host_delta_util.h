// Shared by the cocclAllGatherDelta tests on host ranks (test_host_delta*.cc): the wire
// figures of the agreement, whether the int4 plug-in is built, and the run options.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <vector>

#include "coll_util.h"
#include "harness/harness.h"

namespace coccl::test::delta {

constexpr size_t kHeader = 128;  // the agreement header, per peer
// An exact call also runs an AllGather, which sends its call descriptor (call_desc.h) to each peer.
constexpr size_t kCallDesc = 128;

inline bool haveInt4() {
#ifdef COCCL_INT4_PLUGIN
  return true;
#else
  return false;
#endif
}

// COCCL_* variables are read once per process: before the first coccl call.
inline void setupEnv() {
#if defined(COCCL_INT4_PLUGIN) && defined(COCCL_TAH_PLUGIN)
  setenv("COCCL_CODEC_PLUGIN", COCCL_INT4_PLUGIN "," COCCL_TAH_PLUGIN, 1);
#elif defined(COCCL_INT4_PLUGIN)
  setenv("COCCL_CODEC_PLUGIN", COCCL_INT4_PLUGIN, 1);
#endif
}

inline RunOptions options(long long chunkBytes = -1) {
  RunOptions o;
  o.config = configWithTimeout(60000);
  o.config.compressMinBytes = 0;
  if (chunkBytes > 0) o.config.chunkBytes = chunkBytes;
  return o;
}

// Element i of a typed buffer as a double.
inline double at(cocclDataType_t dt, const std::vector<uint8_t>& buf, size_t i) {
  return getElem(dt, buf.data(), i);
}

}  // namespace coccl::test::delta
