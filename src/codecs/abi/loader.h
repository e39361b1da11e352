// Loading codec plug-ins from shared libraries (registry.h declares the public part:
// loadCodecPlugin, loadEnvCodecPlugins). Internal to src/codecs/abi.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "coccl_codec.h"

namespace coccl {

// registerCodec with the library handle that must stay open while the codec is registered
// (registry.cc).
void registerCodecLibrary(const cocclCodecPlugin_v1_t* desc, const std::string& source,
                          std::shared_ptr<void> library);

// The files a bare name `foo` is looked up as, in order: libcoccl-codec-foo.so in the folder of
// libcoccl.so (or of the executable that linked coccl statically), in its coccl/ subfolder, and
// the bare file name for the dynamic loader's own search (plus <prefix>/lib/coccl/ for a tool
// in <prefix>/bin that links coccl statically). A path (anything with a '/' or
// ending in ".so") is only itself.
std::vector<std::string> pluginCandidates(const std::string& pathOrName);

}  // namespace coccl
