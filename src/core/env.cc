#include "core/env.h"

#include <strings.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "core/log.h"

namespace coccl {

const EnvRow kEnvRows[] = {
#define COCCL_ENV_STR(field, name, def, choices, docDefault, doc) \
  {name, EnvRow::String, def, choices, 0, 0, 0, false, docDefault, doc, &Env::field, nullptr},
#define COCCL_ENV_INT(field, name, def, lo, hi, clampLow, docDefault, doc)                \
  {name,     EnvRow::Int, #def, "",         int64_t{def}, int64_t{lo}, int64_t{hi}, clampLow, \
   docDefault, doc,       nullptr, &Env::field},
#include "core/env_rows.inc"
#undef COCCL_ENV_STR
#undef COCCL_ENV_INT
};
const int kEnvRowCount = static_cast<int>(sizeof(kEnvRows) / sizeof(kEnvRows[0]));

const EnvRow* findEnvRow(const char* name) {
  if (!name) return nullptr;
  for (const EnvRow& r : kEnvRows)
    if (std::string(r.name) == name) return &r;
  return nullptr;
}

namespace {

std::vector<std::string> splitChoices(const char* choices) {
  std::vector<std::string> out;
  std::string s(choices);
  size_t pos = 0;
  while (!s.empty() && pos <= s.size()) {
    size_t bar = s.find('|', pos);
    if (bar == std::string::npos) bar = s.size();
    out.push_back(s.substr(pos, bar - pos));
    pos = bar + 1;
  }
  return out;
}

std::string choiceList(const char* choices) {
  std::vector<std::string> c = splitChoices(choices);
  std::string out;
  for (size_t i = 0; i < c.size(); ++i)
    out += (i == 0 ? "" : i + 1 == c.size() ? " or " : ", ") + c[i];
  return out;
}

std::string rangeText(const EnvRow& r) {
  if (r.maxInt == INT64_MAX) return "an integer >= " + std::to_string(r.minInt);
  return std::to_string(r.minInt) + ".." + std::to_string(r.maxInt);
}

// An integer with an optional binary K/M/G suffix; false when it does not parse or overflows.
bool parseInt(const std::string& text, int64_t* out) {
  const char* v = text.c_str();
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 0);
  if (errno != 0 || end == v) return false;
  int shift = 0;
  switch (*end) {
    case 'k': case 'K': shift = 10; ++end; break;
    case 'm': case 'M': shift = 20; ++end; break;
    case 'g': case 'G': shift = 30; ++end; break;
    default: break;
  }
  if (*end != '\0') return false;
  if (shift && (x > (INT64_MAX >> shift) || x < (INT64_MIN >> shift))) return false;
  *out = shift ? static_cast<int64_t>(static_cast<uint64_t>(x) << shift) : x;
  return true;
}

// A bad COCCL_* value: a WARN like any other (the log, cocclGetLastError) and, where the log
// would not show it (COCCL_DEBUG unset or below WARN, or a subsystem list that selects
// nothing), on stderr anyway: a typo accepted without a word is how a user runs for days on a
// default they did not choose. COCCL_DEBUG=NONE asks for silence and gets it.
void envWarn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void envWarn(const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  COCCL_WARN("%s", msg);
  if (logEnabled(LogLevel::Warn, kLogAll)) return;
  LogLevel level = LogLevel::Warn;
  const char* dbg = std::getenv("COCCL_DEBUG");
  if (dbg && *dbg && parseLogLevel(dbg, &level) && level == LogLevel::None) return;
  std::fprintf(stderr, "COCCL WARN %s\n", msg);
}

Env g_env;
std::vector<char> g_set;  // per row: set (non-empty) when read
std::once_flag g_once;

void readRow(const EnvRow& r) {
  const size_t i = static_cast<size_t>(&r - kEnvRows);
  const char* v = std::getenv(r.name);
  const bool set = v && *v;
  g_set[i] = set;
  std::string str = r.defaultText;
  int64_t num = r.defaultInt;
  if (set) {
    std::string accepted, parsedStr;
    int64_t parsedNum = INT64_MIN;  // stays so unless parsed (or clamped)
    if (parseEnvValue(r, v, &parsedStr, &parsedNum, &accepted)) {
      str = parsedStr;
      num = parsedNum;
    } else if (r.kind == EnvRow::Int && parsedNum != INT64_MIN) {  // clampLow, below min
      envWarn("%s=%s: expected %s; using %lld", r.name, v, accepted.c_str(),
              static_cast<long long>(r.minInt));
      num = r.minInt;
    } else {
      const std::string def = r.kind == EnvRow::Int ? std::to_string(r.defaultInt)
                              : *r.defaultText      ? std::string(r.defaultText)
                                                    : std::string("unset");
      envWarn("%s=%s: expected %s; using the default (%s)%s", r.name, v, accepted.c_str(),
              def.c_str(),
              r.kind == EnvRow::String && r.str == &Env::debug ? "; logging stays off" : "");
    }
  }
  if (set && r.kind == EnvRow::String && r.str == &Env::debugSubsys) {
    const std::string bad = unknownLogSubsys(v);
    if (!bad.empty()) {
      envWarn("%s=%s: no subsystem %s (known: INIT, COLL, CODEC, NET, BOOTSTRAP, TRANSPORT, "
              "ENV, ALLOC, CUDA, ALL); ignored", r.name, v, bad.c_str());
    }
  }
  if (r.kind == EnvRow::String)
    g_env.*(r.str) = str;
  else
    g_env.*(r.num) = num;
}

void readAll() {
  g_set.assign(static_cast<size_t>(kEnvRowCount), 0);
  // Strings first: warnings about integers may log, and logging reads the strings' variables.
  for (const EnvRow& r : kEnvRows)
    if (r.kind == EnvRow::String) readRow(r);
  for (const EnvRow& r : kEnvRows)
    if (r.kind == EnvRow::Int) readRow(r);
}

}  // namespace

bool envChoice(const EnvRow& row, const std::string& value, std::string* canonical) {
  if (!*row.choices) {
    *canonical = value;
    return true;
  }
  for (const std::string& c : splitChoices(row.choices)) {
    if (strcasecmp(c.c_str(), value.c_str()) == 0) {
      *canonical = c;
      return true;
    }
  }
  return false;
}

bool parseEnvValue(const EnvRow& row, const std::string& text, std::string* str, int64_t* num,
                   std::string* accepted) {
  if (row.kind == EnvRow::String) {
    if (envChoice(row, text, str)) return true;
    *accepted = choiceList(row.choices);
    return false;
  }
  *accepted = rangeText(row);
  int64_t x = 0;
  if (!parseInt(text, &x)) return false;
  if (x < row.minInt || x > row.maxInt) {
    if (x < row.minInt && row.clampLow) *num = row.minInt;
    return false;
  }
  *num = x;
  *str = std::to_string(x);
  return true;
}

std::string envAcceptedText(const EnvRow& r) {
  if (r.kind == EnvRow::Int) return rangeText(r);
  return *r.choices ? choiceList(r.choices) : "text (checked where used)";
}

std::string envMarkdownTable() {
  std::string t = "| variable | default | accepted (else: a warning, and the default) | meaning |\n"
                  "|---|---|---|---|\n";
  for (const EnvRow& r : kEnvRows) {
    std::string def = *r.docDefault ? r.docDefault : r.defaultText;
    t += "| `" + std::string(r.name) + "` | " + def + " | " + envAcceptedText(r) + " | " + r.doc +
         " |\n";
  }
  return t;
}

const Env& env() {
  std::call_once(g_once, readAll);
  return g_env;
}

bool envIsSet(const EnvRow& row) {
  env();
  return g_set[static_cast<size_t>(&row - kEnvRows)] != 0;
}

std::string envValueText(const EnvRow& row) {
  const Env& e = env();
  return row.kind == EnvRow::String ? e.*(row.str) : std::to_string(e.*(row.num));
}

void reloadEnvForTesting() {
  env();
  readAll();
}

}  // namespace coccl
