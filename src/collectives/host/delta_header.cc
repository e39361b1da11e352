#include "collectives/host/delta_header.h"

#include <algorithm>
#include <cstring>

#include "codecs/codec.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/hash.h"

namespace coccl {
namespace {

std::string typeText(uint32_t dt) {
  return dtypeValid(static_cast<int>(dt)) ? dtypeName(static_cast<cocclDataType_t>(dt))
                                          : format("type %u", dt);
}

std::string codecText(const DeltaHeader& h) {
  std::string s(h.codec, strnlen(h.codec, sizeof(h.codec)));
  if (s.empty()) s = "?";
  if (h.codecHash) s += format("@%u", h.codecFormat);
  return s;
}

const char* resetText(const DeltaHeader& h) {
  return (h.flags & COCCL_DELTA_RESET) ? "set" : "clear";
}

}  // namespace

DeltaHeader makeDeltaHeader(unsigned flags, size_t count, cocclDataType_t dt, bool device,
                            const Codec* codec, bool delta, uint64_t payloadBytes) {
  DeltaHeader h;
  h.flags = static_cast<uint16_t>(flags);
  h.count = count;
  h.dtype = static_cast<uint32_t>(dt);
  h.mode = delta ? 1u : 0u;
  h.mem = device ? 1u : 0u;
  const std::string spec = codec ? codec->spec() : std::string("none");
  h.codecFormat = codec ? codec->formatVersion() : 0;
  h.codecHash = codec ? fnv1a64(spec) : 0;
  h.payloadBytes = payloadBytes;
  std::memcpy(h.codec, spec.data(), std::min(spec.size(), sizeof(h.codec) - 1));
  return h;
}

std::string deltaMismatch(const std::vector<DeltaHeader>& all) {
  for (size_t r = 0; r < all.size(); ++r) {
    const DeltaHeader& h = all[r];
    if (h.magic != kDeltaMagic || h.version != kDeltaVersion)
      return format(
          "rank %zu's AllGatherDelta header has magic 0x%08x version %u (expected 0x%08x "
          "version %u): do all ranks run the same coccl?",
          r, h.magic, static_cast<unsigned>(h.version), kDeltaMagic,
          static_cast<unsigned>(kDeltaVersion));
  }
  const DeltaHeader& a = all[0];
  for (size_t r = 1; r < all.size(); ++r) {
    const DeltaHeader& b = all[r];
    std::string diff;
    auto add = [&](const std::string& field) { diff += (diff.empty() ? "" : "; ") + field; };
    if ((a.flags & COCCL_DELTA_RESET) != (b.flags & COCCL_DELTA_RESET))
      add(format("reset flag (COCCL_DELTA_RESET): rank 0 %s, rank %zu %s", resetText(a), r,
                 resetText(b)));
    if (a.flags != b.flags && diff.empty())
      add(format("flags: rank 0 0x%x, rank %zu 0x%x", static_cast<unsigned>(a.flags), r,
                 static_cast<unsigned>(b.flags)));
    if (a.count != b.count)
      add(format("sendcount: rank 0 %llu, rank %zu %llu", static_cast<unsigned long long>(a.count),
                 r, static_cast<unsigned long long>(b.count)));
    if (a.dtype != b.dtype)
      add(format("datatype: rank 0 %s, rank %zu %s", typeText(a.dtype).c_str(), r,
                 typeText(b.dtype).c_str()));
    if (a.mem != b.mem)
      add(format("buffers: rank 0 %s, rank %zu %s", a.mem ? "device" : "host", r,
                 b.mem ? "device" : "host"));
    if (a.codecHash != b.codecHash || a.codecFormat != b.codecFormat ||
        std::memcmp(a.codec, b.codec, sizeof(a.codec)) != 0)
      add(format("codec: rank 0 %s, rank %zu %s", codecText(a).c_str(), r, codecText(b).c_str()));
    if (diff.empty() && a.mode != b.mode)
      add(format("mode: rank 0 %s, rank %zu %s", a.mode ? "difference" : "exact", r,
                 b.mode ? "difference" : "exact"));
    if (diff.empty() && a.payloadBytes != b.payloadBytes)
      add(format("payload bytes: rank 0 %llu, rank %zu %llu",
                 static_cast<unsigned long long>(a.payloadBytes), r,
                 static_cast<unsigned long long>(b.payloadBytes)));
    if (!diff.empty())
      return "the ranks' calls disagree (nothing was written to recvbuff): " + diff;
  }
  return "";
}

}  // namespace coccl
