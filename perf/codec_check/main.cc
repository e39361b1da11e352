// coccl_codec_check SPEC [--quick] [--data MANIFEST] [--threads N]: runs the codec conformance
// battery (battery.h) on the codec makeCodec(SPEC) makes, prints one row per check and exits 1
// when any check fails (2 on a bad command line or spec).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "battery.h"

int main(int argc, char** argv) {
  CLI::App app{"coccl_codec_check: the codec conformance battery (README \"Codec conformance "
               "checker\"): bytes written, determinism, round-trip error against the codec's "
               "elementErrorBound, partial blocks, non-finite input, decodeReduceEncode, "
               "random payloads.",
               "coccl_codec_check"};
  std::string spec;
  coccl::check::Options opt;
  app.add_option("spec", spec, "codec spec as makeCodec takes it: none, int8, fp8_ash_ds:block=64, ...")
      ->required();
  app.add_flag("--quick", opt.quick, "smaller inputs, no count 1000003, fewer random payloads");
  app.add_option("--data", opt.manifest,
                 "tp_tensors_manifest.json (or its directory): also round-trip the real tensors");
  app.add_option("--threads", opt.threads, "threads of the concurrent determinism run (vs 1)")
      ->capture_default_str()
      ->check(CLI::Range(2, 256));
  app.add_option("--seed", opt.seed, "seed of every input")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  coccl::CodecPtr codec;
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
