// makeCodec / codecNames: the table of built-in codecs (from the codec list, codec_list.h).
#include <string>

#include "codecs/codec.h"
#include "codecs/codec_factories.h"
#include "codecs/spec.h"
#include "core/error.h"

namespace coccl {

namespace {

struct Entry {
  const char* name;
  CodecPtr (*make)(const codec_detail::ParsedSpec&);
};

const Entry kCodecs[] = {
#define COCCL_CODEC_ENTRY_(Kind, name, id, bits, meta, align) \
  {#name, codec_detail::make##Kind##Codec},
    COCCL_CODEC_LIST(COCCL_CODEC_ENTRY_)
#undef COCCL_CODEC_ENTRY_
};

}  // namespace

CodecPtr makeCodec(const std::string& spec) {
  codec_detail::ParsedSpec parsed = codec_detail::parseSpec(spec);
  for (const Entry& e : kCodecs)
    if (parsed.name == e.name) return e.make(parsed);
  COCCL_THROW(cocclInvalidArgument, "codec spec '%s': unknown codec '%s' (known: %s)",
              codec_detail::quoted(spec).c_str(), codec_detail::quoted(parsed.name).c_str(),
              codecNames().c_str());
}

std::string codecNames() {
  std::string s;
  for (const Entry& e : kCodecs) {
    if (!s.empty()) s += ", ";
    s += e.name;
  }
  return s;
}

}  // namespace coccl
