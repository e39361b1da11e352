// coccl_codec_check CODEC [SPEC] [--quick] [--data MANIFEST] [--threads N] [--against SO]: runs the codec
// conformance battery (battery.h) on one codec, prints one row per check and exits 1 when any
// check fails (2 on a bad command line, spec or plug-in).
//
// CODEC is one of (README "Codec conformance checker"):
//   a codec spec        int8, fp8_ash_ds:block=64, or a codec COCCL_CODEC_PLUGIN loaded;
//   a plug-in name      foo: not a registered codec, so libcoccl-codec-foo.so is loaded (beside
//                       this executable, in its coccl/ subfolder (in the build tree a link to the
//                       plug-ins beside libcoccl), in <prefix>/lib/coccl/ from <prefix>/bin, then
//                       the loader's path) and
//                       CODEC is used as the spec (foo:block=16 passes its parameters);
//   a plug-in path      anything with a '/' or ending in .so: loaded, then its codec is used.
// SPEC (optional) gives the parameters when CODEC has none: either "key=value,..." or a whole
// spec "name[:key=value,...]" whose name must be the codec's.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "battery.h"
#include "codecs/abi/registry.h"

namespace {

bool looksLikePath(const std::string& s) {
  return s.find('/') != std::string::npos ||
         (s.size() > 3 && s.compare(s.size() - 3, 3, ".so") == 0) ||
         s.find(".so.") != std::string::npos;
}

bool registered(const std::string& name) {
  for (const coccl::CodecEntry& e : coccl::registeredCodecs())
    if (name == e.desc->name) return true;
  return false;
}

// The spec to check, from the two positionals; throws std::runtime_error (or coccl::Error from
// the loader) with the reason.
std::string resolveSpec(const std::string& first, const std::string& second) {
  const std::string envFailure = coccl::loadEnvCodecPlugins();
  if (!envFailure.empty()) throw std::runtime_error(envFailure);
  std::string base, name;
  if (looksLikePath(first)) {
    name = coccl::loadCodecPlugin(first);
    base = name;
  } else {
    base = first;
    name = first.substr(0, first.find(':'));
    if (!registered(name)) coccl::loadCodecPlugin(name);  // a bare plug-in name
  }
  if (second.empty()) return base;
  if (base.find(':') != std::string::npos)
    throw std::runtime_error("'" + first + "' has parameters already; drop SPEC '" + second + "'");
  const size_t colon = second.find(':');
  if (colon == std::string::npos && second.find('=') != std::string::npos)
    return name + ":" + second;  // key=value,...
  const std::string other = second.substr(0, colon);
  if (other != name)
    throw std::runtime_error("SPEC '" + second + "' names codec '" + other + "', but " + first +
                             " is codec '" + name + "'");
  return second;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"coccl_codec_check: the codec conformance battery (README \"Codec conformance "
               "checker\"): bytes written, determinism, round-trip error against the codec's "
               "elementErrorBound, partial blocks, non-finite input, decodeReduceEncode, "
               "random payloads.\n"
               "CODEC is a codec spec (int8, fp8_ash_ds:block=64), a bare plug-in name (foo: "
               "libcoccl-codec-foo.so beside this executable, in its coccl/ subfolder, in "
               "<prefix>/lib/coccl/ for an executable in <prefix>/bin, then on the loader's "
               "path) or a plug-in path (with a '/' or ending in .so). SPEC gives "
               "the parameters when CODEC has none: 'key=value,...' or 'name:key=value,...' "
               "with the codec's own name. Examples: coccl_codec_check int8:block=64; "
               "coccl_codec_check ./libcoccl-codec-foo.so block=16; coccl_codec_check foo "
               "foo:block=16.",
               "coccl_codec_check"};
  std::string first, second;
  coccl::check::Options opt;
  app.add_option("codec", first, "codec spec, plug-in name or plug-in path (.so)")->required();
  app.add_option("spec", second, "parameters: key=value,... or name:key=value,...");
  app.add_flag("--quick", opt.quick, "smaller inputs, no count 1000003, fewer random payloads");
  app.add_option("--data", opt.manifest,
                 "tp_tensors_manifest.json (or its directory): also round-trip the real tensors");
  app.add_option("--threads", opt.threads, "threads of the concurrent determinism run (vs 1)")
      ->capture_default_str()
      ->check(CLI::Range(2, 256));
  app.add_option("--seed", opt.seed, "seed of every input")->capture_default_str();
  app.add_option("--against", opt.against,
                 "another build of the same plug-in (.so): its host operations must give the "
                 "same bytes as this one's where both have the same formatVersion");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::string spec;
  coccl::CodecPtr codec;
  try {
    spec = resolveSpec(first, second);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coccl_codec_check: cannot use '%s': %s (codecs: %s)\n", first.c_str(),
                 e.what(), coccl::codecNames().c_str());
    return 2;
  }
  try {
    codec = coccl::makeCodec(spec);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coccl_codec_check: bad codec spec '%s': %s (codecs: %s)\n", spec.c_str(),
                 e.what(), coccl::codecNames().c_str());
    return 2;
  }
  const std::vector<coccl::check::CheckResult> results = coccl::check::runBattery(*codec, opt);
  std::fputs(coccl::check::formatTable(*codec, results).c_str(), stdout);
  return coccl::check::allPassed(results) ? 0 : 1;
}
