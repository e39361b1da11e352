// Fuzzes the codec spec parser: codec_detail::parseSpec and makeCodec on arbitrary strings.
// Each either succeeds or throws coccl::Error (cocclInvalidArgument) with a bounded message;
// a spec makeCodec accepts gives a codec whose canonical spec() parses again to the same
// codec (same spec() text).
#include "codecs/codec.h"
#include "codecs/spec.h"
#include "core/error.h"
#include "fuzz_util.h"

using namespace coccl;
using coccl::fuzz::fail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    codec_detail::ParsedSpec ps = codec_detail::parseSpec(text);
    if (ps.text != text) fail("parseSpec: text is not the spec as given");
  } catch (const Error& e) {
    if (e.code() != cocclInvalidArgument) fail(format("parseSpec threw code %d", e.code()));
    if (std::string(e.what()).size() > 4096) fail("parseSpec: an unbounded message");
  }
  try {
    CodecPtr c = makeCodec(text);
    if (!c) fail("makeCodec returned null");
    CodecPtr again = makeCodec(c->spec());
    if (again->spec() != c->spec())
      fail(format("canonical spec '%s' reparses as '%s'", c->spec().c_str(),
                  again->spec().c_str()));
  } catch (const Error& e) {
    if (e.code() != cocclInvalidArgument) fail(format("makeCodec threw code %d", e.code()));
    if (std::string(e.what()).size() > 4096) fail("makeCodec: an unbounded message");
  }
  return 0;
}
