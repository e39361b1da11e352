#include "collectives/policy_file.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "collectives/policy_json.h"
#include "core/dtype.h"
#include "core/error.h"

namespace coccl {
namespace {

constexpr size_t kMaxFileBytes = 1u << 20;

// Errors of one file: "policy file 'PATH' line L: WHAT".
struct Where {
  const std::string& path;
  [[noreturn]] void fail(int line, const std::string& what) const {
    COCCL_THROW(cocclInvalidArgument, "policy file '%s' line %d: %s", path.c_str(), line,
                what.c_str());
  }
};

const char* const kRuleKeys =
    "name, nranks, members, stride, collective, dtype, bytes, direction, codec, min_bytes, exact, "
    "delta, warmup_calls";

struct CollName {
  const char* name;
  unsigned bit;
};
const CollName kColls[] = {{"allreduce", kPolicyAllReduce},
                           {"reducescatter", kPolicyReduceScatter},
                           {"allgather", kPolicyAllGather},
                           {"sendrecv", kPolicySendRecv}};

// Type names: the dtype table's (nccl-tests') and the short ones trainers use.
bool dtypeByName(const std::string& n, cocclDataType_t* dt) {
  static const struct {
    const char* alias;
    cocclDataType_t dt;
  } kAliases[] = {{"fp32", cocclFloat32}, {"float32", cocclFloat32}, {"fp16", cocclFloat16},
                  {"float16", cocclFloat16}, {"bf16", cocclBfloat16}, {"fp64", cocclFloat64},
                  {"float64", cocclFloat64}};
  for (const DtypeInfo& d : kDtypes)
    if (n == d.name) return *dt = d.type, true;
  for (const auto& a : kAliases)
    if (n == a.alias) return *dt = a.dt, true;
  return false;
}

// A byte count: a non-negative integer, or a string of one with a binary K/M/G suffix.
uint64_t bytesValue(const Where& w, const JsonValue& v, const char* what) {
  if (v.kind == JsonValue::Int) {
    if (v.i < 0) w.fail(v.line, std::string(what) + " must be >= 0, not " + std::to_string(v.i));
    return static_cast<uint64_t>(v.i);
  }
  if (v.kind == JsonValue::String) {
    const std::string& s = v.s;
    size_t digits = 0;
    while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
    int shift = -1;
    const std::string unit = s.substr(digits);
    if (unit.empty()) shift = 0;
    else if (unit == "K" || unit == "k" || unit == "KiB") shift = 10;
    else if (unit == "M" || unit == "m" || unit == "MiB") shift = 20;
    else if (unit == "G" || unit == "g" || unit == "GiB") shift = 30;
    if (digits > 0 && digits <= 19 && shift >= 0) {  // 19 digits fit in uint64_t
      const uint64_t x = std::stoull(s.substr(0, digits));
      if (x <= (static_cast<uint64_t>(INT64_MAX) >> shift)) return x << shift;
    }
    w.fail(v.line, std::string(what) + " \"" + s +
                       "\" is not a byte count (an integer, or one with a K, M or G suffix)");
  }
  w.fail(v.line, std::string(what) + " must be a byte count (an integer or a string such as "
                                     "\"64K\"), not " + jsonKindName(v.kind));
}

int intValue(const Where& w, const JsonValue& v, const char* what, int64_t lo) {
  if (v.kind != JsonValue::Int)
    w.fail(v.line, std::string(what) + " must be an integer, not " + jsonKindName(v.kind));
  if (v.i < lo || v.i > INT32_MAX)
    w.fail(v.line, std::string(what) + " must be in " + std::to_string(lo) + ".." +
                       std::to_string(INT32_MAX) + ", not " + std::to_string(v.i));
  return static_cast<int>(v.i);
}

// A string or a list of strings, each mapped to a bit by `bit` (false: unknown, `accepted`
// says what is).
template <class Bit>
uint32_t nameSet(const Where& w, const JsonValue& v, const char* what, const char* accepted,
                 Bit bit) {
  std::vector<const JsonValue*> names;
  if (v.kind == JsonValue::String) {
    names.push_back(&v);
  } else if (v.kind == JsonValue::Array) {
    if (v.items.empty()) w.fail(v.line, std::string("this rule can never match: ") + what +
                                            " is an empty list");
    for (const JsonValue& x : v.items) names.push_back(&x);
  } else {
    w.fail(v.line, std::string(what) + " must be a string or a list of strings, not " +
                       jsonKindName(v.kind));
  }
  uint32_t set = 0;
  for (const JsonValue* x : names) {
    if (x->kind != JsonValue::String)
      w.fail(x->line, std::string(what) + " lists " + jsonKindName(x->kind) +
                          "; expected strings");
    uint32_t b = 0;
    if (!bit(x->s, &b))
      w.fail(x->line, std::string("unknown ") + what + " \"" + x->s + "\" (one of " + accepted +
                          ")");
    set |= b;
  }
  return set;
}

void parseBytes(const Where& w, const JsonValue& v, PolicyRule* r) {
  if (v.kind != JsonValue::Object)
    w.fail(v.line, std::string("bytes must be an object {\"from\": N, \"below\": M}, not ") +
                       jsonKindName(v.kind));
  for (size_t i = 0; i < v.members.size(); ++i) {
    const auto& [k, x] = v.members[i];
    if (k == "from") r->bytesFrom = bytesValue(w, x, "bytes.from");
    else if (k == "below") r->bytesBelow = bytesValue(w, x, "bytes.below");
    else w.fail(v.keyLines[i], "unknown key \"" + k + "\" in bytes (it takes from, below)");
  }
  if (r->bytesFrom >= r->bytesBelow)
    w.fail(v.line, "this rule can never match: bytes from " + bytesText(r->bytesFrom) +
                       " is not below " + bytesText(r->bytesBelow));
}

void parseMembers(const Where& w, const JsonValue& v, PolicyRule* r) {
  if (v.kind != JsonValue::Array)
    w.fail(v.line, std::string("members must be a list of world ranks, not ") +
                       jsonKindName(v.kind));
  if (v.items.empty()) w.fail(v.line, "this rule can never match: members is an empty list");
  for (const JsonValue& x : v.items) r->members.push_back(intValue(w, x, "a member", 0));
  std::vector<int> sorted = r->members;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i] == sorted[i - 1])
      w.fail(v.line, "members lists world rank " + std::to_string(sorted[i]) + " twice");
  r->members = sorted;
}

// Whether a (earlier) takes every call b would take (so b can never match).
bool covers(const PolicyRule& a, const PolicyRule& b) {
  if ((b.colls & ~a.colls) || (b.dtypes & ~a.dtypes)) return false;
  if (a.direction != P2PDir::Any && a.direction != b.direction) return false;
  if (a.bytesFrom > b.bytesFrom || a.bytesBelow < b.bytesBelow) return false;
  if (a.hasName && a.name != "*" && !(b.hasName && b.name == a.name)) return false;
  const int bSize = b.nranks ? b.nranks : static_cast<int>(b.members.size());
  if (a.nranks && a.nranks != bSize) return false;
  if (!a.members.empty() && a.members != b.members) return false;
  if (a.stride && a.stride != b.stride) return false;
  return true;
}

// A value that is the string a or b: true for a. Else "MUST, not <the value>".
bool oneOfTwo(const Where& w, const JsonValue& x, const char* a, const char* b,
              const std::string& must) {
  if (x.kind == JsonValue::String && (x.s == a || x.s == b)) return x.s == a;
  w.fail(x.line, must + ", not " +
                     (x.kind == JsonValue::String ? "\"" + x.s + "\""
                                                  : std::string(jsonKindName(x.kind))));
}

PolicyRule parseRule(const Where& w, const JsonValue& v) {
  if (v.kind != JsonValue::Object)
    w.fail(v.line, std::string("a rule must be an object, not ") + jsonKindName(v.kind));
  PolicyRule r;
  r.line = v.line;
  const JsonValue* codec = nullptr;
  int exactLine = 0, deltaLine = 0, directionLine = 0;
  for (size_t i = 0; i < v.members.size(); ++i) {
    const auto& [k, x] = v.members[i];
    if (k == "name") {
      if (x.kind != JsonValue::String)
        w.fail(x.line, std::string("name must be a string, not ") + jsonKindName(x.kind));
      r.hasName = true;
      r.name = x.s;
    } else if (k == "nranks") {
      r.nranks = intValue(w, x, "nranks", 1);
    } else if (k == "members") {
      parseMembers(w, x, &r);
    } else if (k == "stride") {
      r.stride = intValue(w, x, "stride", 1);
    } else if (k == "collective") {
      r.colls = nameSet(w, x, "collective", "allreduce, reducescatter, allgather, sendrecv",
                        [](const std::string& n, uint32_t* b) {
                          for (const CollName& c : kColls)
                            if (n == c.name) return *b = c.bit, true;
                          return false;
                        });
    } else if (k == "dtype") {
      r.dtypes = nameSet(w, x, "dtype", "float/fp32, half/fp16, bfloat16/bf16, double, int8, ...",
                         [](const std::string& n, uint32_t* b) {
                           cocclDataType_t dt;
                           if (!dtypeByName(n, &dt)) return false;
                           *b = 1u << static_cast<int>(dt);
                           return true;
                         });
    } else if (k == "bytes") {
      parseBytes(w, x, &r);
    } else if (k == "codec") {
      if (x.kind != JsonValue::String)
        w.fail(x.line, std::string("codec must be a codec spec string, not ") +
                           jsonKindName(x.kind));
      codec = &x;
    } else if (k == "min_bytes") {
      r.minBytes = static_cast<int64_t>(bytesValue(w, x, "min_bytes"));
    } else if (k == "exact") {
      const bool nccl = oneOfTwo(w, x, "nccl", "coccl",
                                 "exact must be \"nccl\" or \"coccl\" (who runs the uncompressed "
                                 "calls)");
      r.exact = nccl ? ExactPath::Nccl : ExactPath::Coccl;
      exactLine = x.line;
    } else if (k == "warmup_calls") {
      if (x.kind != JsonValue::Int || x.i < 0)
        w.fail(x.line, std::string("warmup_calls must be an integer >= 0 (calls that run exact "
                                   "first), not ") +
                           (x.kind == JsonValue::Int ? std::to_string(x.i)
                                                     : std::string(jsonKindName(x.kind))));
      r.warmupCalls = static_cast<uint64_t>(x.i);
    } else if (k == "direction") {
      const bool up = oneOfTwo(w, x, "up", "down",
                               "direction must be \"up\" (messages to a higher rank) or \"down\"");
      r.direction = up ? P2PDir::Up : P2PDir::Down;
      directionLine = x.line;
    } else if (k == "delta") {
      if (x.kind != JsonValue::Bool)
        w.fail(x.line, std::string("delta must be true or false, not ") + jsonKindName(x.kind));
      r.delta = x.b;
      deltaLine = x.line;
    } else {
      w.fail(v.keyLines[i], "unknown key \"" + k + "\" (a rule takes " + kRuleKeys + ")");
    }
  }
  if (!codec) w.fail(v.line, "the rule has no \"codec\" (a spec, or \"none\" for exact)");
  if (exactLine && (r.colls & kPolicySendRecv))
    w.fail(exactLine,
           "exact applies to the collectives (allreduce, reducescatter, allgather), "
           "not to sendrecv");
  if (directionLine && r.colls != kPolicySendRecv)
    w.fail(directionLine,
           "direction applies to sendrecv alone: the rule's collective must be "
           "\"sendrecv\"");
  if (r.delta && r.colls != kPolicyAllGather)
    w.fail(deltaLine, "delta applies to allgather alone: the rule's collective must be "
                      "\"allgather\" (the NCCL shim's weight-difference all-gather)");
  // A two-level spec is for the reductions only: parse it as the first other collective asks.
  const Coll kind = (r.colls & kPolicyAllGather) ? Coll::AllGather
                    : (r.colls & kPolicySendRecv) ? Coll::Send
                                                  : Coll::AllReduce;
  try {
    r.entry = parsePolicyEntry(codec->s, kind);
  } catch (const Error& e) {
    w.fail(codec->line, e.what());
  }
  const int size = static_cast<int>(r.members.size());
  if (size && r.nranks && size != r.nranks)
    w.fail(r.line, "this rule can never match: " + std::to_string(size) +
                       " members but nranks " + std::to_string(r.nranks));
  if (size > 1 && r.stride)
    for (int i = 1; i < size; ++i)
      if (r.members[i] - r.members[i - 1] != r.stride)
        w.fail(r.line, "this rule can never match: members " + std::to_string(r.members[i - 1]) +
                           " and " + std::to_string(r.members[i]) + " are not stride " +
                           std::to_string(r.stride) + " apart");
  if (r.entry.codec) {
    uint32_t enc = 0;
    for (int t = 0; t < cocclNumTypes; ++t)
      if ((r.dtypes >> t & 1u) && r.entry.codec->supportsType(static_cast<cocclDataType_t>(t)))
        enc |= 1u << t;
    if (!enc)
      w.fail(codec->line, "codec " + r.entry.spec() + " encodes none of the rule's types: it "
                          "would never compress (use \"none\" for exact)");
  }
  if (r.delta && !r.entry.codec)
    w.fail(deltaLine, "delta needs a codec: with \"none\" the all-gather is exact anyway");
  if (r.minBytes >= 0 && static_cast<uint64_t>(r.minBytes) >= r.bytesBelow)
    w.fail(r.line, "min_bytes " + bytesText(static_cast<uint64_t>(r.minBytes)) +
                       " is not below bytes.below " + bytesText(r.bytesBelow) +
                       ": the codec would never be used (use \"none\" for exact)");
  return r;
}

}  // namespace

std::string bytesText(uint64_t b) {
  if (b == UINT64_MAX) return "inf";
  static const char* kUnits[] = {"", "K", "M", "G"};
  int u = 0;
  while (u < 3 && b >= 1024 && b % 1024 == 0) b /= 1024, ++u;
  return std::to_string(b) + kUnits[u];
}

bool PolicyRule::matchesComm(const CommFacts& comm, const std::string& path) const {
  if (hasName && fnmatch(name.c_str(), comm.name.c_str(), 0) != 0) return false;
  if (nranks && comm.nranks != nranks) return false;
  if (members.empty() && !stride) return true;
  std::vector<int> sorted = comm.worldRanks;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i] == sorted[i - 1])
      COCCL_THROW(cocclInvalidArgument,
                  "policy file '%s' line %d matches on members' world ranks, but world rank %d "
                  "belongs to more than one rank of this communicator (ranks as threads of one "
                  "process sharing RANK?): set cocclConfig_t.worldRank on each (docs/policy.md)",
                  path.c_str(), line, sorted[i]);
  if (!members.empty() && sorted != members) return false;
  if (stride)
    for (size_t i = 1; i < sorted.size(); ++i)
      if (sorted[i] - sorted[i - 1] != stride) return false;
  return true;
}

std::string PolicyRule::callText() const {
  std::string s;
  for (const CollName& c : kColls)
    if (colls & c.bit) s += (s.empty() ? "" : ",") + std::string(c.name);
  if (dtypes != kPolicyAllTypes) {
    std::string t;
    for (int i = 0; i < cocclNumTypes; ++i)
      if (dtypes >> i & 1u)
        t += (t.empty() ? "" : ",") + std::string(dtypeName(static_cast<cocclDataType_t>(i)));
    s += " dtype " + t;
  }
  if (bytesFrom || bytesBelow != UINT64_MAX)
    s += " bytes [" + bytesText(bytesFrom) + ", " + bytesText(bytesBelow) + ")";
  if (direction != P2PDir::Any) s += direction == P2PDir::Up ? " up" : " down";
  return s;
}

PolicyFile parsePolicyText(const std::string& text, const std::string& path) {
  const Where w{path};
  PolicyFile f;
  f.path = path;
  JsonValue root;
  std::string err;
  if (!parseJsonWithLines(text, &root, &err))
    COCCL_THROW(cocclInvalidArgument, "policy file '%s' %s", path.c_str(), err.c_str());
  if (root.kind != JsonValue::Object)
    w.fail(root.line, std::string("the file must be an object {\"rules\": [...]}, not ") +
                          jsonKindName(root.kind));
  const JsonValue* rules = nullptr;
  for (size_t i = 0; i < root.members.size(); ++i) {
    if (root.members[i].first == "rules") rules = &root.members[i].second;
    else w.fail(root.keyLines[i], "unknown key \"" + root.members[i].first +
                                      "\" (the file takes rules)");
  }
  if (!rules) w.fail(root.line, "the file has no \"rules\" list");
  if (rules->kind != JsonValue::Array)
    w.fail(rules->line, std::string("rules must be a list, not ") + jsonKindName(rules->kind));
  for (const JsonValue& v : rules->items) {
    PolicyRule r = parseRule(w, v);
    for (const PolicyRule& earlier : f.rules)
      if (covers(earlier, r))
        w.fail(r.line, "this rule can never match: the rule on line " +
                           std::to_string(earlier.line) + " takes every call it would");
    f.rules.push_back(std::move(r));
  }
  return f;
}

PolicyFile loadPolicyFile(const std::string& path) {
  // Opened without blocking and read only when it is a regular file: a FIFO (or a device)
  // would block init forever, past COCCL_TIMEOUT_MS.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    COCCL_THROW(cocclInvalidArgument, "policy file '%s': cannot read it: %s", path.c_str(),
                std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    COCCL_THROW(cocclInvalidArgument, "policy file '%s': cannot read it: %s", path.c_str(),
                std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    COCCL_THROW(cocclInvalidArgument, "policy file '%s': not a regular file (a %s)", path.c_str(),
                S_ISDIR(st.st_mode)    ? "directory"
                : S_ISFIFO(st.st_mode) ? "FIFO"
                : S_ISSOCK(st.st_mode) ? "socket"
                                       : "device");
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      COCCL_THROW(cocclInvalidArgument, "policy file '%s': cannot read it: %s", path.c_str(),
                  std::strerror(errno));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxFileBytes)
      COCCL_THROW(cocclInvalidArgument, "policy file '%s': larger than 1 MiB", path.c_str());
  }
  return parsePolicyText(text, path);
}

}  // namespace coccl
