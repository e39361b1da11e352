// Factories of the built-in codecs, called by the registry with the parsed spec. Each reads
// its keys, validates them (throwing Error(cocclInvalidArgument)) and builds the codec with its
// canonical spec string.
#pragma once

#include "codecs/codec.h"
#include "codecs/spec.h"

namespace coccl {
namespace codec_detail {

// Codec ids (stable, part of the wire contract).
enum : uint32_t { kCodecIdNone = 0, kCodecIdInt8 = 1, kCodecIdFp8AshDs = 2 };

CodecPtr makeNoneCodec(const ParsedSpec& spec);
CodecPtr makeInt8Codec(const ParsedSpec& spec);
CodecPtr makeFp8AshDsCodec(const ParsedSpec& spec);

// The block sizes the blocked codecs accept.
inline const std::vector<long>& blockSizes() {
  static const std::vector<long> kSizes = {32, 64, 128, 256, 512};
  return kSizes;
}

}  // namespace codec_detail
}  // namespace coccl
