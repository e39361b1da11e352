#include "collectives/call_desc.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "codecs/codec.h"
#include "core/dtype.h"
#include "core/error.h"

namespace coccl {
namespace {

bool hasRoot(Coll c) {
  return c == Coll::Broadcast || c == Coll::Reduce;
}
bool hasOp(Coll c) {
  return c == Coll::AllReduce || c == Coll::ReduceScatter || c == Coll::Reduce;
}

std::string collText(uint32_t c) {
  return c <= static_cast<uint32_t>(Coll::Recv) ? collName(static_cast<Coll>(c))
                                                : format("collective %u", c);
}

std::string typeText(uint32_t dt) {
  return dtypeValid(static_cast<int>(dt)) ? dtypeName(static_cast<cocclDataType_t>(dt))
                                          : format("type %u", dt);
}

std::string opText(uint32_t op) {
  static const char* const kOps[] = {"sum", "prod", "max", "min", "avg"};
  return op < sizeof(kOps) / sizeof(kOps[0]) ? kOps[op] : format("op %u", op);
}

// The descriptor keeps a spec's first sizeof(codec) - 1 characters; a longer one is shown cut,
// with the hashes of the whole specs (two specs that differ past the cut still read apart).
std::string codecText(const CallDesc& d) {
  const size_t n = strnlen(d.codec, sizeof(d.codec));
  std::string s(d.codec, n);
  if (s.empty()) s = "?";
  if (n == sizeof(d.codec) - 1)
    s += format("... (spec hash 0x%016llx|0x%016llx)", static_cast<unsigned long long>(d.codecHash),
                static_cast<unsigned long long>(d.interHash));
  if (d.codecHash) s += format("@%u", d.codecFormat);
  if (d.interHash) s += format(" (inter @%u)", d.interFormat);
  return s;
}

}  // namespace

CallDesc callDescFromBytes(const void* p) {
  CallDesc d;
  std::memcpy(static_cast<void*>(&d), p, sizeof(d));
  return d;
}

uint64_t callDescHash(const CallDesc& d) {
  CallDesc c = d;
  c.eagerBytes = 0;
  return fnv1a64(&c, kCallDescHashedBytes);
}

CallDesc makeCallDesc(const CollRequest& r) {
  CallDesc d;
  d.coll = static_cast<uint16_t>(r.coll);
  d.seq = r.seq;
  d.count = r.count;
  d.dtype = static_cast<uint32_t>(r.dt);
  d.op = hasOp(r.coll) ? static_cast<uint32_t>(r.op) : 0;
  d.root = hasRoot(r.coll) ? r.root : 0;
  std::string text = "none";
  if (r.codec) {
    text = r.codec->spec();
    d.codecFormat = r.codec->formatVersion();
    d.codecHash = fnv1a64(text.data(), text.size());
  }
  if (r.codec && r.interCodec) {
    const std::string& s = r.interCodec->spec();
    d.interFormat = r.interCodec->formatVersion();
    d.interHash = fnv1a64(s.data(), s.size());
    text += "|" + s;
  }
  std::memcpy(d.codec, text.data(), std::min(text.size(), sizeof(d.codec) - 1));
  d.hash = callDescHash(d);
  return d;
}

namespace {

// The message for descriptors d[0..n-1] of ranks rk[0..n-1], d[0] the reference.
std::string describe(const CallDesc* const* d, const int* rk, int n) {
  const CallDesc& a = *d[0];
  for (int r = 0; r < n; ++r)
    if (d[r]->magic != kCallDescMagic || d[r]->version != kCallDescVersion)
      return format(
          "%s: rank %d's call descriptor has magic 0x%08x version %u (expected 0x%08x version "
          "%u): do all ranks run the same coccl?",
          collText(a.coll).c_str(), rk[r], d[r]->magic, static_cast<unsigned>(d[r]->version),
          kCallDescMagic, static_cast<unsigned>(kCallDescVersion));
  std::string diff;
  // Field `name` differs when differs(desc) does: the first such rank against the reference.
  auto field = [&](const char* name, auto differs, auto text) {
    for (int r = 1; r < n; ++r) {
      if (!differs(*d[r])) continue;
      diff += format("%s%s differs: %s on rank %d, %s on rank %d", diff.empty() ? "" : "; ", name,
                     text(a).c_str(), rk[0], text(*d[r]).c_str(), rk[r]);
      return;
    }
  };
  auto u64 = [](uint64_t v) { return format("%llu", static_cast<unsigned long long>(v)); };
  field(
      "collective", [&](const CallDesc& x) { return x.coll != a.coll; },
      [&](const CallDesc& x) { return collText(x.coll); });
  field(
      "call number", [&](const CallDesc& x) { return x.seq != a.seq; },
      [&](const CallDesc& x) { return u64(x.seq); });
  field(
      "count", [&](const CallDesc& x) { return x.count != a.count; },
      [&](const CallDesc& x) { return u64(x.count); });
  field(
      "datatype", [&](const CallDesc& x) { return x.dtype != a.dtype; },
      [&](const CallDesc& x) { return typeText(x.dtype); });
  field(
      "op", [&](const CallDesc& x) { return x.op != a.op; },
      [&](const CallDesc& x) { return opText(x.op); });
  field(
      "root", [&](const CallDesc& x) { return x.root != a.root; },
      [&](const CallDesc& x) { return format("%d", x.root); });
  field(
      "codec",
      [&](const CallDesc& x) {
        return x.codecHash != a.codecHash || x.codecFormat != a.codecFormat ||
               x.interHash != a.interHash || x.interFormat != a.interFormat ||
               std::memcmp(x.codec, a.codec, sizeof(a.codec)) != 0;
      },
      codecText);
  // A difference only the hash sees (a field this build does not compare): still an error.
  if (diff.empty())
    field(
        "descriptor hash", [&](const CallDesc& x) { return x.hash != a.hash; },
        [&](const CallDesc& x) {
          return format("0x%016llx", static_cast<unsigned long long>(x.hash));
        });
  if (diff.empty()) return "";
  std::string msg =
      format("%s (call %llu on rank %d): ranks disagree: %s", collText(a.coll).c_str(),
             static_cast<unsigned long long>(a.seq), rk[0], diff.c_str());
  for (int r = 1; r < n; ++r)
    if (d[r]->seq != a.seq) {
      msg +=
          " (different call numbers: the ranks are out of step, e.g. a rank skipped a call "
          "whose argument checks failed there; destroy the communicator)";
      break;
    }
  return msg;
}

}  // namespace

std::string callDescMismatch(const CallDesc* all, int n) {
  if (n <= 0) return "";
  std::vector<const CallDesc*> d(static_cast<size_t>(n));
  std::vector<int> rk(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) d[static_cast<size_t>(r)] = &all[r], rk[static_cast<size_t>(r)] = r;
  return describe(d.data(), rk.data(), n);
}

std::string callDescPairMismatch(const CallDesc& mine, int myRank, const CallDesc& theirs,
                                 int peer) {
  const CallDesc* d[2] = {&mine, &theirs};
  const int rk[2] = {myRank, peer};
  return describe(d, rk, 2);
}

}  // namespace coccl
