// The environment rows (src/core/env_rows.inc): parsing, validation (a warning naming the
// variable, the value and the range; then the default), defaults and the generated table.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/env.h"
#include "core/log.h"
#include "core_test_util.h"

namespace coccl {
namespace {

// test::ScopedEnv with the last error cleared first (the re-read's warnings land there).
class ScopedEnv : public test::ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : test::ScopedEnv(clear(name), value) {}

 private:
  static const char* clear(const char* name) {
    setLastError("");
    return name;
  }
};

std::string warning() { return lastError(); }

TEST(EnvRows, OneRowPerVariableWithItsField) {
  ASSERT_GT(kEnvRowCount, 10);
  for (int i = 0; i < kEnvRowCount; ++i) {
    const EnvRow& r = kEnvRows[i];
    EXPECT_EQ(std::string(r.name).rfind("COCCL_", 0), 0u) << r.name;
    EXPECT_EQ(findEnvRow(r.name), &r);
    EXPECT_TRUE(*r.doc) << r.name;
    EXPECT_TRUE((r.kind == EnvRow::String) == (r.str != nullptr)) << r.name;
    EXPECT_TRUE((r.kind == EnvRow::Int) == (r.num != nullptr)) << r.name;
    if (r.kind == EnvRow::Int) {
      EXPECT_LE(r.minInt, r.defaultInt) << r.name;
      EXPECT_LE(r.defaultInt, r.maxInt) << r.name;
      EXPECT_EQ(std::to_string(r.defaultInt), r.defaultText) << r.name;
    }
  }
  EXPECT_EQ(findEnvRow("COCCL_NO_SUCH_VARIABLE"), nullptr);
}

TEST(EnvRows, DefaultsComeFromTheRows) {
  EXPECT_EQ(env_default::timeoutMs, 300000);
  EXPECT_EQ(env_default::compressMinBytes, 65536);
  EXPECT_EQ(env_default::chunkBytes, 1 << 20);
  EXPECT_EQ(env_default::ringMinRanks, 16);
  EXPECT_EQ(env_default::deviceStagingBytes, int64_t{64} << 20);
  EXPECT_STREQ(env_default::algo, "auto");
  for (const char* v : {"COCCL_TIMEOUT_MS", "COCCL_ALGO"}) unsetenv(v);
  reloadEnvForTesting();
  EXPECT_EQ(env().timeoutMs, env_default::timeoutMs);
  EXPECT_EQ(env().algo, "auto");
  EXPECT_FALSE(envIsSet(*findEnvRow("COCCL_TIMEOUT_MS")));
}

TEST(EnvRows, IntegersTakeSuffixes) {
  ScopedEnv s("COCCL_COMPRESS_MIN_BYTES", "1K");
  EXPECT_EQ(env().compressMinBytes, 1024);
  EXPECT_TRUE(envIsSet(*findEnvRow("COCCL_COMPRESS_MIN_BYTES")));
  EXPECT_EQ(envValueText(*findEnvRow("COCCL_COMPRESS_MIN_BYTES")), "1024");
}

struct BadCase {
  const char* name;
  const char* value;
  const char* range;  // what the warning says is accepted
  int64_t want;       // the value in force (ints)
};

TEST(EnvRows, OutOfRangeOrUnparsableWarnsAndUsesTheDefault) {
  const BadCase cases[] = {
      {"COCCL_TIMEOUT_MS", "0", "1..1000000000000", 300000},
      {"COCCL_TIMEOUT_MS", "-5", "1..1000000000000", 300000},
      {"COCCL_TIMEOUT_MS", "9000000000000000", "1..1000000000000", 300000},  // no deadline
      {"COCCL_TIMEOUT_MS", "99999999999G", "1..1000000000000", 300000},      // overflows
      {"COCCL_TIMEOUT_MS", "fast", "1..1000000000000", 300000},
      {"COCCL_COMPRESS_MIN_BYTES", "-1", "an integer >= 0", 65536},
      {"COCCL_COMPRESS_MIN_BYTES", "12x", "an integer >= 0", 65536},
      {"COCCL_RING_MIN_RANKS", "0", "1..2147483647", 16},
      {"COCCL_DEVICE_BLOCKS", "129", "0..128", 0},
      {"COCCL_CHUNK_BYTES", "1000", "an integer >= 4096", 4096},  // below: clamped (as before)
      {"COCCL_CHUNK_BYTES", "lots", "an integer >= 4096", 1 << 20},
      {"COCCL_DEVICE_STAGING_BYTES", "1K", "an integer >= 1048576", 1 << 20},
  };
  for (const BadCase& c : cases) {
    ScopedEnv s(c.name, c.value);
    const Env& e = env();
    const EnvRow& r = *findEnvRow(c.name);
    EXPECT_EQ(e.*(r.num), c.want) << c.name << "=" << c.value;
    const std::string w = warning();
    EXPECT_NE(w.find(c.name), std::string::npos) << w;
    EXPECT_NE(w.find(std::string("=") + c.value), std::string::npos) << w;
    EXPECT_NE(w.find(c.range), std::string::npos) << w;
  }
}

TEST(EnvRows, ChoicesAreCheckedAndCanonical) {
  {
    ScopedEnv s("COCCL_ALGO", "Ring");
    EXPECT_EQ(env().algo, "ring");
  }
  {
    ScopedEnv s("COCCL_ALGO", "direct");  // documented synonym of two-shot
    EXPECT_EQ(env().algo, "direct");
  }
  {
    ScopedEnv s("COCCL_ALGO", "tree");
    EXPECT_EQ(env().algo, "auto");
    EXPECT_NE(warning().find("COCCL_ALGO=tree: expected auto, two-shot, direct, ring or one-shot"),
              std::string::npos)
        << warning();
  }
  {
    ScopedEnv s("COCCL_DEVICE_TRANSPORT", "ucx");
    EXPECT_EQ(env().deviceTransport, "auto");
    EXPECT_NE(warning().find("COCCL_DEVICE_TRANSPORT=ucx"), std::string::npos);
  }
  {
    ScopedEnv s("COCCL_DEBUG", "LOUD");
    EXPECT_EQ(env().debug, "");
    EXPECT_NE(warning().find("COCCL_DEBUG=LOUD: expected VERSION, WARN, INFO, TRACE or NONE"),
              std::string::npos)
        << warning();
  }
  {
    ScopedEnv s("COCCL_DEBUG", "info");
    EXPECT_EQ(env().debug, "INFO");
  }
}

// COCCL_DEBUG_SUBSYS: a name that is no subsystem warns (it used to be dropped silently).
TEST(EnvRows, UnknownDebugSubsystemsWarn) {
  EXPECT_EQ(unknownLogSubsys("INIT,coll,^NET"), "^NET");  // '^' only leads the list
  EXPECT_EQ(unknownLogSubsys("^NET,ALL"), "");
  EXPECT_EQ(unknownLogSubsys(",INIT,,"), "");
  EXPECT_EQ(unknownLogSubsys("INIT,FOO,BAR"), "FOO,BAR");
  {
    ScopedEnv s("COCCL_DEBUG_SUBSYS", "INIT,FOO");
    EXPECT_EQ(env().debugSubsys, "INIT,FOO");
    EXPECT_NE(warning().find("COCCL_DEBUG_SUBSYS=INIT,FOO: no subsystem FOO"), std::string::npos)
        << warning();
  }
  {
    ScopedEnv s("COCCL_DEBUG_SUBSYS", "^coll,net");
    (void)env();
    EXPECT_EQ(warning(), "");
  }
}

// A bad value is said on stderr even with logging off (COCCL_DEBUG unset): it used to reach
// only the log, which is off by default, so `COCCL_RING_MIN_RANKS=0` was accepted without a
// word. COCCL_DEBUG=NONE silences it; COCCL_DEBUG=LOUD (itself bad) is said too.
std::string stderrOfEnvRead(const char* name, const char* value) {
  testing::internal::CaptureStderr();
  {
    ScopedEnv s(name, value);
    (void)env();
  }
  return testing::internal::GetCapturedStderr();
}

TEST(EnvRows, BadValuesAreSaidOnStderrWithLoggingOff) {
  if (logEnabled(LogLevel::Warn, kLogAll)) GTEST_SKIP() << "run with COCCL_DEBUG at WARN or more";
  if (const char* d = std::getenv("COCCL_DEBUG"); d && *d) GTEST_SKIP() << "COCCL_DEBUG is set";
  std::string err = stderrOfEnvRead("COCCL_RING_MIN_RANKS", "0");
  EXPECT_NE(err.find("COCCL WARN COCCL_RING_MIN_RANKS=0: expected 1..2147483647; using the "
                     "default (16)"),
            std::string::npos)
      << err;
  err = stderrOfEnvRead("COCCL_DEBUG", "LOUD");
  EXPECT_NE(err.find("COCCL WARN COCCL_DEBUG=LOUD: expected"), std::string::npos) << err;
  EXPECT_NE(err.find("logging stays off"), std::string::npos) << err;
  err = stderrOfEnvRead("COCCL_DEBUG_SUBSYS", "INIT,FOO");
  EXPECT_NE(err.find("COCCL WARN COCCL_DEBUG_SUBSYS=INIT,FOO: no subsystem FOO"),
            std::string::npos)
      << err;
  EXPECT_EQ(stderrOfEnvRead("COCCL_RING_MIN_RANKS", "8"), "");  // a good value: nothing
  {
    test::ScopedEnv quiet("COCCL_DEBUG", "NONE");
    EXPECT_EQ(stderrOfEnvRead("COCCL_RING_MIN_RANKS", "0"), "");
    EXPECT_NE(warning().find("COCCL_RING_MIN_RANKS=0"), std::string::npos)  // still recorded
        << warning();
  }
}

// Logging parses COCCL_DEBUG itself (before env()): it accepts exactly the row's choices.
TEST(EnvRows, LogLevelsAreTheDebugRowsChoices) {
  const EnvRow& r = *findEnvRow("COCCL_DEBUG");
  std::string canon, accepted;
  int64_t n = 0;
  for (const char* v : {"VERSION", "warn", "Info", "TRACE", "none"}) {
    LogLevel l;
    EXPECT_TRUE(parseLogLevel(v, &l)) << v;
    EXPECT_TRUE(parseEnvValue(r, v, &canon, &n, &accepted)) << v;
  }
  LogLevel l;
  EXPECT_FALSE(parseLogLevel("LOUD", &l));
  EXPECT_FALSE(parseEnvValue(r, "LOUD", &canon, &n, &accepted));
}

TEST(EnvRows, MarkdownTableHasEveryRow) {
  const std::string t = envMarkdownTable();
  EXPECT_EQ(t.rfind("| variable | default | accepted (else: a warning, and the default) | "
                    "meaning |\n|---|---|---|---|\n",
                    0),
            0u);
  for (int i = 0; i < kEnvRowCount; ++i)
    EXPECT_NE(t.find(std::string("| `") + kEnvRows[i].name + "` | "), std::string::npos);
  EXPECT_NE(t.find("| `COCCL_TIMEOUT_MS` | 300000 | 1..1000000000000 |"), std::string::npos) << t;
  EXPECT_NE(t.find("| `COCCL_RING_MIN_RANKS` | 16 | 1..2147483647 |"), std::string::npos);
  EXPECT_NE(t.find("| `COCCL_COMPRESS_MIN_BYTES` | 65536 | an integer >= 0 |"),
            std::string::npos);
  EXPECT_NE(t.find("| auto, two-shot, direct, ring or one-shot |"), std::string::npos);
}

}  // namespace
}  // namespace coccl
