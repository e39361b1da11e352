// Small helpers shared by the device paths (CUDA IPC: device_comm.cc; NCCL: nccl_path.cc).
#pragma once

#include <cstddef>

#include "codecs/codec.h"
#include "collectives/communicator.h"

namespace coccl {

// A codec the device path runs compressed (one with a CUDA implementation); else exact.
inline bool codecOnDevice(const Codec* codec) {
  return codec && codec->deviceDesc().kind != CodecKind::None;
}

inline void setStats(CollStats& s, size_t logical, size_t wire, const Codec* codec,
                     const char* algo) {
  s.logicalBytes = logical;
  s.wireBytesSent = wire;
  s.codec = codec ? codec->name() : "none";
  s.algorithm = algo;
}

}  // namespace coccl
