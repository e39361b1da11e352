// Factories of the built-in codecs, called by the registry with the parsed spec. Each reads
// its keys, validates them (throwing Error(cocclInvalidArgument)) and builds the codec with its
// canonical spec string.
#pragma once

#include "codecs/codec.h"
#include "codecs/codec_list.h"
#include "codecs/spec.h"

namespace coccl {
namespace codec_detail {

// Codec ids (stable, part of the wire contract; codec_list.h): kCodecIdNone, kCodecIdInt8, ...
// and the factories makeNoneCodec, makeInt8Codec, ... (defined in each codec's folder).
#define COCCL_CODEC_FACTORY_(Kind, name, id, bits, meta, align) \
  constexpr uint32_t kCodecId##Kind = id;                       \
  CodecPtr make##Kind##Codec(const ParsedSpec& spec);
COCCL_CODEC_LIST(COCCL_CODEC_FACTORY_)
#undef COCCL_CODEC_FACTORY_

// The block sizes the blocked codecs accept.
inline const std::vector<long>& blockSizes() {
  static const std::vector<long> kSizes = {32, 64, 128, 256, 512};
  return kSizes;
}

}  // namespace codec_detail
}  // namespace coccl
