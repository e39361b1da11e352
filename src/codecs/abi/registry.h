// The codec registry: every codec is a plug-in ABI descriptor (include/coccl_codec.h), the
// built-in ones statically linked (builtin_descriptors.cc), the others loaded from shared
// libraries (loader.cc, COCCL_CODEC_PLUGIN). makeCodec (codecs/codec.h) looks a spec's name up
// here and wraps the descriptor's instance in an AbiCodec (abi_codec.h), so that the
// collectives, the tools and the C API see one kind of codec.
//
// Thread-safety: every function may be called from any thread; registration and lookups are
// serialised by one mutex (lookups happen at codec creation, not per call).
#pragma once

#include <string>
#include <vector>

#include "coccl_codec.h"
#include "codecs/codec.h"

namespace coccl {

struct CodecEntry {
  const cocclCodecPlugin_v1_t* desc;
  std::string source;  // "built-in" or the plug-in file's path
};

// Checks a descriptor against the ABI's rules (struct size, version, name, masks, required
// functions, capabilities); "" when it is fine, else the first violation.
std::string validateDescriptor(const cocclCodecPlugin_v1_t* desc);

// Validates and registers `desc` (which must outlive the process's use of it). Throws
// Error(cocclInvalidArgument) naming `source` on a violation or a name that is registered
// already.
void registerCodec(const cocclCodecPlugin_v1_t* desc, const std::string& source);

// Loads one plug-in (a path, or a bare name looked up as libcoccl-codec-NAME.so beside
// libcoccl.so, in its coccl/ subfolder, then on the loader's path) and registers its codec.
// Returns the codec's name. Loading a file that is loaded already returns its name again.
// Throws Error(cocclInvalidArgument) "codec plug-in '<what>': <file>: <reason>" (dlerror's
// text, the missing symbol, the versions, the size, the clash).
std::string loadCodecPlugin(const std::string& pathOrName);

// Loads the plug-ins COCCL_CODEC_PLUGIN lists, once per process. Returns "" or the failure
// (the same text on every later call, so that every communicator creation reports it).
std::string loadEnvCodecPlugins();

// The registered codecs in registration order (built-ins first).
std::vector<CodecEntry> registeredCodecs();

// "name@formatVersion" of every registered codec, sorted and comma-separated: what the ranks
// of a communicator compare at init (they must load the same codecs).
std::string registeredCodecsSignature();

}  // namespace coccl
