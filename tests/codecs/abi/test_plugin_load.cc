// The codec plug-in loader in one process (src/codecs/abi/loader.cc, registry.cc): every refusal
// names the file and the reason; `good` loads by path and by bare name in the order loader.h
// documents, and round-trips through makeCodec. Each case runs in a forked child, because a
// process registers a codec name only once (the same file under another spelling would clash).
#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "codecs/abi/loader.h"
#include "codecs/abi/registry.h"
#include "core/error.h"

namespace coccl {
namespace {

const std::string kDir = COCCL_TEST_PLUGIN_DIR;
const std::string kExeDir = COCCL_TEST_ABI_EXE_DIR;
std::string plugin(const std::string& name) { return kDir + "/libcoccl-codec-" + name + ".so"; }

// Runs fn in a forked child and returns what it returned ("" = fine), or how the child died.
std::string inChild(const std::function<std::string()>& fn) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    close(fds[0]);
    std::string r;
    try {
      r = fn();
    } catch (const std::exception& e) {
      r = std::string("unexpected exception: ") + e.what();
    }
    const char* p = r.data();
    size_t left = r.size();
    while (left > 0) {
      const ssize_t w = write(fds[1], p, left);
      if (w <= 0) break;
      p += w;
      left -= static_cast<size_t>(w);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return "child died (status " + std::to_string(st) + ") after: " + out;
  return out;
}

// loadCodecPlugin(what)'s refusal: "code|message", or "loaded NAME" when it did not refuse.
std::string refusal(const std::string& what) {
  try {
    return "loaded " + loadCodecPlugin(what);
  } catch (const Error& e) {
    return std::to_string(static_cast<int>(e.code())) + "|" + e.what();
  }
}

std::string realPath(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

// The registry entry of codec `name` ("" source when absent).
CodecEntry entryOf(const std::string& name) {
  for (const CodecEntry& e : registeredCodecs())
    if (name == e.desc->name) return e;
  return CodecEntry{nullptr, ""};
}

void expectRefused(const std::string& file, const std::vector<std::string>& words) {
  const std::string r = inChild([&] { return refusal(file); });
  const std::string code = std::to_string(static_cast<int>(cocclInvalidArgument)) + "|";
  ASSERT_EQ(r.compare(0, code.size(), code), 0) << "not cocclInvalidArgument: " << r;
  EXPECT_NE(r.find(file), std::string::npos) << "message does not name the file: " << r;
  for (const std::string& w : words) EXPECT_NE(r.find(w), std::string::npos) << "no '" << w << "' in: " << r;
}

TEST(CodecPluginLoad, BadVersionNamesBothVersions) {
  expectRefused(plugin("badversion"), {"abiVersion is 2", "ABI version 1", "cocclCodecPlugin_v1"});
}

TEST(CodecPluginLoad, BadStructSizeNamesBothSizes) {
  const size_t want = sizeof(cocclCodecPlugin_v1_t);
  expectRefused(plugin("badsize"), {"structSize is " + std::to_string(want - 8),
                                    "ABI v1 has " + std::to_string(want)});
}

TEST(CodecPluginLoad, OnlyAFutureSymbolIsRefused) {
  expectRefused(plugin("nosymbol"),
                {"no symbol cocclCodecPlugin_v1", "cocclCodecPlugin_v2", "another ABI version"});
}

TEST(CodecPluginLoad, NameClashWithBuiltinIsRefused) {
  expectRefused(plugin("clash"), {"'int8' is registered already", "built-in"});
}

TEST(CodecPluginLoad, MissingFileIsRefused) {
  expectRefused(kDir + "/libcoccl-codec-does_not_exist.so", {"cannot open"});
  const std::string r = inChild([] { return refusal("no_such_plugin_name"); });
  EXPECT_NE(r.find("libcoccl-codec-no_such_plugin_name.so"), std::string::npos) << r;
  EXPECT_NE(r.find("cannot open"), std::string::npos) << r;
}

TEST(CodecPluginLoad, CreateFailureNamesPluginAndReason) {
  const std::string r = inChild([] {
    const std::string name = loadCodecPlugin(plugin("badparse"));
    if (name != "badparse") return "loaded as " + name;
    try {
      makeCodec("badparse:x=1");
      return std::string("makeCodec accepted badparse:x=1");
    } catch (const Error& e) {
      if (e.code() != cocclInvalidArgument) return std::string("wrong code: ") + e.what();
      return std::string("refused|") + e.what();
    }
  });
  ASSERT_EQ(r.compare(0, 8, "refused|"), 0) << r;
  EXPECT_NE(r.find("this plug-in refuses every spec (params 'x=1')"), std::string::npos) << r;
  EXPECT_NE(r.find(plugin("badparse")), std::string::npos) << "no file name: " << r;
}

// Round trip of makeCodec(spec) on N(0,1): "" or the first violation of the codec's own bound.
std::string roundTrip(const std::string& spec, size_t n) {
  CodecPtr c = makeCodec(spec);
  std::vector<float> x(n), y(n, NAN);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (float& v : x) v = nd(rng);
  std::vector<uint8_t> pay(c->encodedBytes(n, cocclFloat32) + 1, 0xEE);
  c->encode(x.data(), cocclFloat32, n, pay.data());
  if (pay.back() != 0xEE) return spec + ": encode wrote past encodedBytes";
  c->decode(pay.data(), n, cocclFloat32, y.data());
  const size_t G = c->blockElems();
  for (size_t b = 0; b < n; b += G) {
    double amax = 0, ss = 0;
    const size_t e = std::min(n, b + G);
    for (size_t i = b; i < e; ++i) {
      amax = std::max(amax, std::fabs(double(x[i])));
      ss += double(x[i]) * x[i];
    }
    const double bound = c->elementErrorBound(std::sqrt(ss / double(e - b)), amax);
    for (size_t i = b; i < e; ++i)
      if (!(std::fabs(double(y[i]) - x[i]) <= bound))
        return spec + ": element " + std::to_string(i) + " off by more than " + std::to_string(bound);
  }
  return "";
}

TEST(CodecPluginLoad, GoodByPathRegistersAndRoundTrips) {
  const std::string r = inChild([] {
    const std::string file = plugin("good");
    const std::string name = loadCodecPlugin(file);
    if (name != "good") return "loaded as " + name;
    if (loadCodecPlugin(file) != "good") return std::string("second load differs");
    const CodecEntry e = entryOf("good");
    if (!e.desc || e.source != file) return "registered from '" + e.source + "'";
    if (registeredCodecsSignature().find("good@1") == std::string::npos)
      return "signature lacks good@1: " + registeredCodecsSignature();
    CodecPtr c = makeCodec("good");
    if (c->spec() != "good:block=16" || c->blockElems() != 16) return "spec " + c->spec();
    if (c->encodedBytes(33, cocclFloat32) != 2 * 20 + 5) return std::string("encodedBytes(33)");
    if (!c->supportsType(cocclFloat32) || c->supportsType(cocclFloat16)) return std::string("types");
    if (makeCodec("good:block=32")->spec() != "good:block=32") return std::string("block=32");
    for (const char* spec : {"good", "good:block=8", "good:block=64"})
      for (size_t n : {size_t{1}, size_t{7}, size_t{33}, size_t{4096}, size_t{100003}}) {
        const std::string bad = roundTrip(spec, n);
        if (!bad.empty()) return bad;
      }
    try {
      makeCodec("good:block=3");
      return std::string("good:block=3 accepted");
    } catch (const Error& e) {
      if (std::string(e.what()).find("must be 8, 16, 32 or 64") == std::string::npos)
        return std::string("block=3 message: ") + e.what();
    }
    return std::string();
  });
  EXPECT_EQ(r, "");
}

TEST(CodecPluginLoad, CandidatesFollowTheDocumentedOrder) {
  const std::string r = inChild([] {
    const std::vector<std::string> v = pluginCandidates("foo");
    if (v.size() != 3) return std::string("not 3 candidates");
    const std::string dir = realPath(kExeDir);
    if (realPath(v[0].substr(0, v[0].rfind('/'))) != dir || v[0].substr(v[0].rfind('/')) != "/libcoccl-codec-foo.so")
      return "first: " + v[0];
    if (v[1] != v[0].substr(0, v[0].rfind('/')) + "/coccl/libcoccl-codec-foo.so")
      return "second: " + v[1];
    if (v[2] != "libcoccl-codec-foo.so") return "third: " + v[2];
    for (const char* p : {"./x.so", "/a/b", "libx.so", "libx.so.1"})
      if (pluginCandidates(p) != std::vector<std::string>{p}) return std::string("path ") + p;
    return std::string();
  });
  EXPECT_EQ(r, "");
}

TEST(CodecPluginLoad, BareNameBesideTheLibraryComesFirst) {
  const std::string r = inChild([] {
    if (loadCodecPlugin("order") != "order") return std::string("not order");
    const CodecEntry e = entryOf("order");
    if (e.desc->formatVersion != 1) return "format " + std::to_string(e.desc->formatVersion) + " from " + e.source;
    if (realPath(e.source) != realPath(kExeDir + "/libcoccl-codec-order.so")) return "from " + e.source;
    return std::string();
  });
  EXPECT_EQ(r, "");
}

TEST(CodecPluginLoad, BareNameInTheCocclSubfolder) {
  const std::string r = inChild([] {
    if (loadCodecPlugin("subonly") != "subonly") return std::string("not subonly");
    const std::string src = entryOf("subonly").source;
    if (realPath(src) != realPath(kExeDir + "/coccl/libcoccl-codec-subonly.so")) return "from " + src;
    return std::string();
  });
  EXPECT_EQ(r, "");
}

TEST(CodecPluginLoad, BareNameOnTheLoaderPath) {
  const char* ld = getenv("LD_LIBRARY_PATH");
  if (!ld || std::string(ld).find(kDir) == std::string::npos)
    GTEST_SKIP() << "LD_LIBRARY_PATH lacks " << kDir << " (ctest sets it)";
  const std::string r = inChild([] {
    if (loadCodecPlugin("good") != "good") return std::string("not good");
    const std::string src = entryOf("good").source;
    if (src != "libcoccl-codec-good.so") return "from " + src;
    return roundTrip("good", 1000);
  });
  EXPECT_EQ(r, "");
}

TEST(CodecPluginLoad, EnvListStopsAtTheFirstFailureEveryTime) {
  const std::string r = inChild([] {
    const std::string list = plugin("good") + "," + plugin("badversion");
    setenv("COCCL_CODEC_PLUGIN", list.c_str(), 1);
    const std::string f1 = loadEnvCodecPlugins(), f2 = loadEnvCodecPlugins();
    if (f1.empty() || f1 != f2) return "failure '" + f1 + "' then '" + f2 + "'";
    if (f1.find(plugin("badversion")) == std::string::npos || f1.find("COCCL_CODEC_PLUGIN") == std::string::npos)
      return "message: " + f1;
    try {
      makeCodec("good");
      return std::string("makeCodec worked after a failed COCCL_CODEC_PLUGIN");
    } catch (const Error& e) {
      if (std::string(e.what()).find("abiVersion is 2") == std::string::npos)
        return std::string("makeCodec message: ") + e.what();
    }
    return std::string();
  });
  EXPECT_EQ(r, "");
}

}  // namespace
}  // namespace coccl

namespace coccl {
namespace {

TEST(CodecPluginLoad, BadBareNamesAndBuiltinNamesAreRefusedWithAHint) {
  for (const char* what : {"good none", "good;q8", "good:block=64", "Good"}) {
    const std::string r = inChild([&] { return refusal(what); });
    EXPECT_NE(r.find("not a plug-in name"), std::string::npos) << what << ": " << r;
    EXPECT_EQ(r.find("cannot open"), std::string::npos) << what << ": searched anyway: " << r;
  }
  const std::string r = inChild([] { return refusal("int8"); });
  EXPECT_NE(r.find("'int8' is built in"), std::string::npos) << r;
  EXPECT_NE(r.find("COCCL_CODEC=int8"), std::string::npos) << r;
}

TEST(CodecPluginLoad, TheSameFileUnderTwoSpellingsLoadsOnce) {
  const std::string r = inChild([] {
    const std::string a = loadCodecPlugin(plugin("good"));
    const std::string b = loadCodecPlugin(kDir + "/../" + kDir.substr(kDir.rfind('/') + 1) +
                                          "/libcoccl-codec-good.so");
    if (a != "good" || b != "good") return "loaded " + a + " and " + b;
    int n = 0;
    for (const CodecEntry& e : registeredCodecs()) n += std::string(e.desc->name) == "good";
    return n == 1 ? std::string() : "registered " + std::to_string(n) + " times";
  });
  EXPECT_EQ(r, "");
}

}  // namespace
}  // namespace coccl
