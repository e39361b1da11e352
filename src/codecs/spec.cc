#include "codecs/spec.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "codecs/dtype_io.h"
#include "core/error.h"

namespace coccl {
namespace codec_detail {

namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return s.substr(b, e - b);
}

[[noreturn]] void bad(const ParsedSpec& spec, const std::string& what) {
  COCCL_THROW(cocclInvalidArgument, "codec spec '%s': %s", quoted(spec.text).c_str(), what.c_str());
}

}  // namespace

std::string quoted(const std::string& text) {
  constexpr size_t kMax = 64;
  if (text.size() <= kMax) return text;
  return text.substr(0, kMax) + "... (" + std::to_string(text.size()) + " characters)";
}

ParsedSpec parseSpec(const std::string& text) {
  ParsedSpec spec;
  spec.text = text;
  size_t colon = text.find(':');
  spec.name = trim(text.substr(0, colon));
  if (spec.name.empty()) bad(spec, "missing codec name");
  if (colon == std::string::npos) return spec;
  std::string rest = text.substr(colon + 1);
  size_t pos = 0;
  while (true) {
    size_t comma = rest.find(',', pos);
    std::string item =
        rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t eq = item.find('=');
    if (eq == std::string::npos) bad(spec, "expected key=value, got '" + quoted(trim(item)) + "'");
    std::string key = trim(item.substr(0, eq));
    std::string value = trim(item.substr(eq + 1));
    if (key.empty()) bad(spec, "empty key in '" + quoted(trim(item)) + "'");
    if (value.empty()) bad(spec, "empty value for key '" + quoted(key) + "'");
    for (const auto& kv : spec.params)
      if (kv.first == key) bad(spec, "key '" + quoted(key) + "' given twice");
    spec.params.emplace_back(key, value);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return spec;
}

const std::string* SpecReader::find(const char* key) {
  for (size_t i = 0; i < spec_.params.size(); ++i) {
    if (spec_.params[i].first == key) {
      used_[i] = true;
      return &spec_.params[i].second;
    }
  }
  return nullptr;
}

long SpecReader::getIntOneOf(const char* key, long def, const std::vector<long>& allowed) {
  const std::string* v = find(key);
  if (v == nullptr) return def;
  errno = 0;
  char* end = nullptr;
  long x = std::strtol(v->c_str(), &end, 10);
  bool ok = errno == 0 && end != v->c_str() && *end == '\0';
  bool in = false;
  for (long a : allowed) in = in || (ok && a == x);
  if (!in) {
    std::string list;
    for (size_t i = 0; i < allowed.size(); ++i)
      list += (i ? ", " : "") + std::to_string(allowed[i]);
    bad(spec_, std::string(key) + " must be one of " + list + " (got '" + quoted(*v) + "')");
  }
  return x;
}

float SpecReader::getFloat(const char* key, float def, double lo, double hi) {
  const std::string* v = find(key);
  if (v == nullptr) return def;
  errno = 0;
  char* end = nullptr;
  float x = std::strtof(v->c_str(), &end);
  if (errno != 0 || end == v->c_str() || *end != '\0' || !std::isfinite(x) || x < lo || x > hi)
    bad(spec_, std::string(key) + " must be a number in [" + formatFloat(static_cast<float>(lo)) +
                   ", " + formatFloat(static_cast<float>(hi)) + "] (got '" + quoted(*v) + "')");
  return x == 0.0f ? 0.0f : x;  // -0 reads as 0: one canonical spec ("lambda=0") for both
}

std::string SpecReader::getWord(const char* key, const std::string& def,
                                const std::vector<std::string>& allowed) {
  const std::string* v = find(key);
  if (v == nullptr) return def;
  std::string list;
  for (size_t i = 0; i < allowed.size(); ++i) {
    if (allowed[i] == *v) return *v;
    list += (i ? ", " : "") + allowed[i];
  }
  bad(spec_, std::string(key) + " must be one of " + list + " (got '" + quoted(*v) + "')");
}

void SpecReader::finish(const char* keys) const {
  for (size_t i = 0; i < used_.size(); ++i) {
    if (!used_[i])
      bad(spec_, "unknown key '" + quoted(spec_.params[i].first) + "' for codec " +
                     quoted(spec_.name) +
                     (keys[0] ? std::string(" (keys: ") + keys + ")" : " (it takes no keys)"));
  }
}

std::string formatFloat(float v) {
  char buf[64];
  for (int prec = 1; prec <= 9; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, static_cast<double>(v));
    if (std::strtof(buf, nullptr) == v) break;
  }
  // integers print plainly ("1000", not "1e+03")
  if (std::fabs(v) < 1e9f && std::nearbyint(v) == v)
    std::snprintf(buf, sizeof(buf), "%.0f", static_cast<double>(v));
  return buf;
}

}  // namespace codec_detail
}  // namespace coccl
