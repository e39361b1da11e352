#include "core/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "core/error.h"

namespace coccl {
namespace {

// Logging reads its three variables itself (not through env()), so that env()'s own warnings
// can be logged without re-entering env()'s one-time initialisation.
struct LogConfig {
  LogLevel level = LogLevel::None;  // like NCCL: silent unless COCCL_DEBUG is set
  uint32_t subsys = kLogAll;
  FILE* out = stderr;
  char host[64] = "";
  int pid = 0;
};

LogConfig g_cfg;
std::once_flag g_cfgOnce;
std::mutex g_outMutex;
std::mutex g_lastMutex;
// Trivially destructible (no destructor to race with): a detached bootstrap root thread may
// still warn (set the last error) while the process exits and runs the static destructors
// (TSan: heap-use-after-free in setLastError from rootMain against the exit handlers). Holds
// the first kLastMax - 1 bytes of the message.
constexpr size_t kLastMax = 4096;
char g_last[kLastMax] = "";
thread_local std::string t_lastCopy;
thread_local int t_rank = -1;

uint32_t subsysBit(const std::string& name) {
  static const struct {
    const char* name;
    uint32_t bit;
  } kNames[] = {{"INIT", kLogInit},       {"COLL", kLogColl},          {"CODEC", kLogCodec},
                {"NET", kLogNet},         {"BOOTSTRAP", kLogBootstrap}, {"TRANSPORT", kLogTransport},
                {"ENV", kLogEnv},         {"ALLOC", kLogAlloc},        {"CUDA", kLogCuda},
                {"ALL", kLogAll}};
  for (const auto& n : kNames)
    if (strcasecmp(n.name, name.c_str()) == 0) return n.bit;
  return 0;
}

void initConfig() {
  gethostname(g_cfg.host, sizeof(g_cfg.host) - 1);
  if (char* dot = strchr(g_cfg.host, '.')) *dot = '\0';
  g_cfg.pid = static_cast<int>(getpid());
  const char* lvl = getenv("COCCL_DEBUG");
  if (lvl && !parseLogLevel(lvl, &g_cfg.level)) g_cfg.level = LogLevel::None;
  const char* sub = getenv("COCCL_DEBUG_SUBSYS");
  if (sub && *sub) {
    bool invert = sub[0] == '^';
    uint32_t mask = 0;
    std::string s(invert ? sub + 1 : sub);
    size_t pos = 0;
    while (pos <= s.size()) {
      size_t comma = s.find(',', pos);
      if (comma == std::string::npos) comma = s.size();
      mask |= subsysBit(s.substr(pos, comma - pos));
      pos = comma + 1;
    }
    g_cfg.subsys = invert ? ~mask : mask;
  }
  const char* file = getenv("COCCL_DEBUG_FILE");
  if (file && *file) {
    std::string path;
    for (const char* p = file; *p; ++p) {
      if (p[0] == '%' && p[1] == 'h') { path += g_cfg.host; ++p; }
      else if (p[0] == '%' && p[1] == 'p') { path += std::to_string(g_cfg.pid); ++p; }
      else path += *p;
    }
    if (FILE* f = fopen(path.c_str(), "w")) g_cfg.out = f;
  }
}

const LogConfig& cfg() {
  std::call_once(g_cfgOnce, initConfig);
  return g_cfg;
}

const char* levelName(LogLevel l) {
  switch (l) {
    case LogLevel::Warn: return "WARN";
    case LogLevel::Info: return "INFO";
    case LogLevel::Trace: return "TRACE";
    default: return "VERSION";
  }
}

}  // namespace

std::string unknownLogSubsys(const std::string& list) {
  std::string s = !list.empty() && list[0] == '^' ? list.substr(1) : list, bad;
  for (size_t pos = 0; pos <= s.size();) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    const std::string name = s.substr(pos, comma - pos);
    if (!name.empty() && subsysBit(name) == 0) bad += (bad.empty() ? "" : ",") + name;
    pos = comma + 1;
  }
  return bad;
}

bool parseLogLevel(const char* s, LogLevel* level) {
  static const struct {
    const char* name;
    LogLevel level;
  } kLevels[] = {{"VERSION", LogLevel::Version}, {"WARN", LogLevel::Warn},
                 {"INFO", LogLevel::Info},       {"TRACE", LogLevel::Trace},
                 {"NONE", LogLevel::None}};
  for (const auto& l : kLevels) {
    if (s && strcasecmp(s, l.name) == 0) {
      *level = l.level;
      return true;
    }
  }
  return false;
}

bool logEnabled(LogLevel level, uint32_t subsys) {
  const LogConfig& c = cfg();
  return static_cast<int>(level) <= static_cast<int>(c.level) && (subsys & c.subsys) != 0;
}

void setLogRank(int rank) { t_rank = rank; }

void logMessage(LogLevel level, uint32_t subsys, const char* file, int line, const char* fmt,
                ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  if (level == LogLevel::Warn) setLastError(msg);
  if (!logEnabled(level, subsys)) return;
  const LogConfig& c = cfg();
  long tid = static_cast<long>(syscall(SYS_gettid));
  const int pid = static_cast<int>(getpid());  // not cached: a forked child logs its own
  std::lock_guard<std::mutex> lock(g_outMutex);
  if (level == LogLevel::Trace) {
    const char* base = strrchr(file, '/');
    fprintf(c.out, "%s:%d:%ld [%d] COCCL %s %s:%d %s\n", c.host, pid, tid, t_rank,
            levelName(level), base ? base + 1 : file, line, msg.c_str());
  } else {
    fprintf(c.out, "%s:%d:%ld [%d] COCCL %s %s\n", c.host, pid, tid, t_rank, levelName(level),
            msg.c_str());
  }
  fflush(c.out);
}

void setLastError(const std::string& msg) {
  std::lock_guard<std::mutex> lock(g_lastMutex);
  const size_t n = std::min(msg.size(), kLastMax - 1);
  std::memcpy(g_last, msg.data(), n);
  g_last[n] = '\0';
}

const char* lastError() {
  // Copy into thread-local storage so the pointer stays valid while other threads log.
  std::lock_guard<std::mutex> lock(g_lastMutex);
  t_lastCopy = g_last;
  return t_lastCopy.c_str();
}

}  // namespace coccl
