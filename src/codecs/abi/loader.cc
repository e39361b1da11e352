// Codec plug-in loading (registry.h, loader.h): dlopen, the versioned entry symbol, checks.
#include "codecs/abi/loader.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "codecs/abi/registry.h"
#include "codecs/spec.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"

#ifndef COCCL_INSTALL_LIBDIR
#define COCCL_INSTALL_LIBDIR "lib"  // CMake passes CMAKE_INSTALL_LIBDIR
#endif

namespace coccl {
namespace {

// The folder of the object that holds this code (libcoccl.so, or the executable that linked
// coccl statically), symbolic links resolved. For the executable dladdr reports argv[0] (maybe
// relative, or a bare name found on $PATH): /proc/self/exe is the file itself.
std::string selfDir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&selfDir), &info) == 0 || !info.dli_fname) return "";
  std::string f = info.dli_fname;
  // Shared objects come with the path the dynamic loader opened; only argv[0] is relative.
  if (f.empty() || f[0] != '/') f = "/proc/self/exe";
  char resolved[PATH_MAX];
  if (realpath(f.c_str(), resolved)) f = resolved;
  const size_t slash = f.rfind('/');
  return slash == std::string::npos ? "" : f.substr(0, slash);
}

// A bare plug-in name: what a codec name may be (include/coccl_codec.h).
bool bareNameOk(const std::string& s) {
  if (s.empty() || s.size() > 31) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

bool isPath(const std::string& s) {
  return s.find('/') != std::string::npos ||
         (s.size() > 3 && s.compare(s.size() - 3, 3, ".so") == 0) ||
         s.find(".so.") != std::string::npos;
}

struct Loaded {
  std::string request;  // as asked for
  std::string file;     // the file that opened
  std::string name;     // its codec
  void* handle;         // dlopen's handle: the same file under any spelling has the same one
};

std::mutex g_mu;
std::vector<Loaded> g_loaded;

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

}  // namespace

std::vector<std::string> pluginCandidates(const std::string& what) {
  if (isPath(what)) return {what};
  const std::string file = "libcoccl-codec-" + what + ".so";
  const std::string dir = selfDir();
  std::vector<std::string> v;
  if (!dir.empty()) {
    v.push_back(dir + "/" + file);
    v.push_back(dir + "/coccl/" + file);
    // A tool in <prefix>/bin that links coccl statically (coccl_codec_check): <prefix>/lib/coccl
    const size_t n = dir.size();
    if (n >= 4 && dir.compare(n - 4, 4, "/bin") == 0)
      v.push_back(dir.substr(0, n - 4) + "/" COCCL_INSTALL_LIBDIR "/coccl/" + file);
  }
  v.push_back(file);  // LD_LIBRARY_PATH, the cache, the default folders
  return v;
}

std::string loadCodecPlugin(const std::string& whatIn) {
  const std::string what = trim(whatIn);
  COCCL_CHECK_ARG(!what.empty(), "codec plug-in: empty name");
  if (!isPath(what)) {
    COCCL_CHECK_ARG(bareNameOk(what),
                    "codec plug-in '%s': not a plug-in name (1..31 characters of [a-z0-9_]; a "
                    "path needs a '/'; a codec spec goes into COCCL_CODEC)",
                    codec_detail::quoted(what).c_str());
    for (const CodecEntry& e : registeredCodecs())
      COCCL_CHECK_ARG(e.source != "built-in" || what != e.desc->name,
                      "codec plug-in '%s': '%s' is built in, nothing to load (use it in a codec "
                      "spec: COCCL_CODEC=%s)", what.c_str(), what.c_str(), what.c_str());
  }
  std::lock_guard<std::mutex> lock(g_mu);
  for (const Loaded& l : g_loaded)
    if (l.request == what || l.file == what) return l.name;
  std::string tried;
  void* h = nullptr;
  std::string file;
  for (const std::string& c : pluginCandidates(what)) {
    dlerror();
    h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) {
      file = c;
      break;
    }
    const char* e = dlerror();
    tried += (tried.empty() ? "" : "; ") + std::string(e ? e : c.c_str());
  }
  COCCL_CHECK_ARG(h != nullptr, "codec plug-in '%s': cannot open it (%s)", what.c_str(),
                  tried.c_str());
  std::shared_ptr<void> lib(h, [](void* p) { dlclose(p); });
  // "codec plug-in 'foo' (/lib/libcoccl-codec-foo.so)" for a bare name, the path once for a path.
  const std::string who = what == file ? "codec plug-in " + file
                                       : "codec plug-in '" + what + "' (" + file + ")";
  for (const Loaded& l : g_loaded)  // the same file under another spelling
    if (l.file == file || l.handle == h) return l.name;
  dlerror();
  auto* desc = static_cast<const cocclCodecPlugin_v1_t*>(dlsym(h, COCCL_CODEC_PLUGIN_SYMBOL_V1));
  if (!desc) {
    // Newer (or older) ABI versions than this coccl knows: say which.
    std::string found;
    for (int v = 0; v <= 16; ++v) {
      if (v == 1) continue;
      const std::string sym = "cocclCodecPlugin_v" + std::to_string(v);
      if (dlsym(h, sym.c_str())) found += (found.empty() ? "" : ", ") + sym;
    }
    COCCL_THROW(cocclInvalidArgument,
                "%s: no symbol %s (ABI version %u, the one this coccl knows)%s%s", who.c_str(),
                COCCL_CODEC_PLUGIN_SYMBOL_V1, COCCL_CODEC_ABI_LATEST,
                found.empty() ? "" : "; it exports ",
                found.empty() ? "" : (found + ": built for another ABI version").c_str());
  }
  const std::string bad = validateDescriptor(desc);
  COCCL_CHECK_ARG(bad.empty(), "%s: %s", who.c_str(), bad.c_str());
  registerCodecLibrary(desc, file, lib);
  COCCL_INFO(kLogInit, "codec plug-in %s: codec '%s' format %u from %s", what.c_str(), desc->name,
             desc->formatVersion, file.c_str());
  g_loaded.push_back({what, file, desc->name, h});
  return desc->name;
}

std::string loadEnvCodecPlugins() {
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    const std::string list = env().codecPlugin;
    size_t pos = 0;
    while (pos <= list.size()) {
      size_t comma = list.find(',', pos);
      if (comma == std::string::npos) comma = list.size();
      const std::string item = trim(list.substr(pos, comma - pos));
      pos = comma + 1;
      if (item.empty() || item == "none") continue;
      try {
        loadCodecPlugin(item);
      } catch (const std::exception& e) {
        failure = std::string("COCCL_CODEC_PLUGIN: ") + e.what();
        return;
      }
    }
  });
  return failure;
}

}  // namespace coccl
