// The weight-difference AllGather's agreement header (cocclAllGatherDelta, include/coccl.h).
//
// Before any payload moves, every rank sends every other rank a 128-byte header describing its
// call (reset flag, mode, count, type, memory kind, codec and its format version, payload
// bytes), over the host transport whatever the buffers are (deltaExchangeHeaders in
// host/delta.cc). Every rank then holds all p headers and runs deltaMismatch() on them: the
// same input, so the same verdict and the same message on every rank. Disagreed: every rank
// throws cocclInvalidUsage before touching recvbuff; the tag sequence stays in step, so the
// communicator stays usable.
//
// Layout (128 bytes, little-endian as the hosts store it):
//   magic u32 'CDG1' | version u16 | flags u16 (the call's flags, COCCL_DELTA_RESET = bit 0) |
//   count u64 | dtype u32 | mode u32 (0 exact, 1 delta) | mem u32 (0 host, 1 device) |
//   codecFormat u32 (the codec's formatVersion, 0 none) | codecHash u64 (FNV-1a of the
//   canonical spec, 0 none) | payloadBytes u64 (what this rank sends each peer) |
//   codec char[80] (the canonical spec, NUL-terminated, cut to 79 characters; "none").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "coccl.h"

namespace coccl {

class Codec;

constexpr uint32_t kDeltaMagic = 0x31474443u;  // "CDG1"
constexpr uint16_t kDeltaVersion = 1;

struct DeltaHeader {
  uint32_t magic = kDeltaMagic;
  uint16_t version = kDeltaVersion;
  uint16_t flags = 0;
  uint64_t count = 0;
  uint32_t dtype = 0;
  uint32_t mode = 0;
  uint32_t mem = 0;
  uint32_t codecFormat = 0;
  uint64_t codecHash = 0;
  uint64_t payloadBytes = 0;
  char codec[80] = {};
};
static_assert(sizeof(DeltaHeader) == 128, "the delta AllGather header is 128 bytes on the wire");
constexpr size_t kDeltaHeaderBytes = sizeof(DeltaHeader);

// This rank's header. `codec` is the call's codec after the policy (nullptr: none); `delta`
// whether the call runs the difference mode (a codec and no reset); `payloadBytes` the bytes
// this rank sends each peer.
DeltaHeader makeDeltaHeader(unsigned flags, size_t count, cocclDataType_t dt, bool device,
                            const Codec* codec, bool delta, uint64_t payloadBytes);

// "" when all headers (rank order) agree; else one message naming the first rank that differs
// from rank 0 and every field that differs, with both values ("reset flag: rank 0 set, rank 2
// clear; count: rank 0 1000, rank 2 999"). A header that is not one (magic, version) is
// reported as such.
std::string deltaMismatch(const std::vector<DeltaHeader>& all);

}  // namespace coccl
