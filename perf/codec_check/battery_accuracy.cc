// The accuracy checks of the battery: round trips of synthetic and real inputs against the
// codec's own elementErrorBound, partial blocks, non-finite input.
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <stdexcept>

#include "battery.h"
#include "battery_util.h"
#include "core/error.h"
#include "tp_data.h"

namespace coccl {
namespace check {

using namespace detail;

namespace {

CheckResult fromStats(const std::string& name, const ErrStats& s) {
  CheckResult r;
  r.name = name;
  r.numbers = statsNumbers(s);
  r.pass = s.violations == 0;
  r.detail = s.firstViolation;
  return r;
}

}  // namespace

std::vector<CheckResult> checkRoundTrip(const Codec& c, const Options& opt) {
  const size_t n = countFor(c, opt.quick ? (size_t{1} << 16) : (size_t{1} << 18));
  std::vector<CheckResult> out;
  uint64_t seed = opt.seed * 1000 + 1;
  for (const std::string& kind : inputKinds()) {
    ErrStats s;
    const std::vector<float> v = makeInput(kind, n, seed++, c.blockElems());
    for (cocclDataType_t dt : kTypes) {
      if (!c.supportsType(dt)) continue;
      roundTrip(c, v, dt, kind + " " + typeName(dt), s);
    }
    out.push_back(fromStats("roundtrip " + kind, s));
  }
  return out;
}

// For a codec that refuses counts that are not whole blocks: whole-block counts are taken;
// every other count has encodedBytes 0 and every operation fails with cocclInvalidArgument,
// writing nothing (include/coccl_codec.h, "Blocks").
CheckResult checkRefusedPartialBlocks(const Codec& c, const Options& opt) {
  Tally t;
  const size_t G = c.blockElems();
  auto refused = [&](const std::string& at, const std::function<void()>& op) {
    ++t.calls;
    try {
      op();
      t.fail(at + ": accepted a count that encodedBytes refuses");
    } catch (const Error& e) {
      if (e.code() != cocclInvalidArgument)
        t.fail(at + fmt(": failed with result %d, not cocclInvalidArgument (%d): ",
                        static_cast<int>(e.code()), static_cast<int>(cocclInvalidArgument)) +
               e.what());
    } catch (const std::exception& e) {
      t.fail(at + ": failed with something other than cocclInvalidArgument: " + e.what());
    }
  };
  for (cocclDataType_t dt : kTypes) {
    if (!c.supportsType(dt)) continue;
    const size_t bad = t.bad;
    for (size_t n : {G, 3 * G}) {  // whole blocks: taken
      const std::string at = fmt("%s count %zu (whole blocks of %zu)", typeName(dt), n, G);
      ++t.calls;
      ErrStats s;  // the accuracy is roundtrip's; here only whether the count is taken
      try {
        if (c.encodedBytes(n, dt) == 0) throw std::runtime_error("encodedBytes is 0");
        roundTrip(c, makeInput("normal", n, opt.seed + 900 + n, G), dt, at, s);
      } catch (const std::exception& e) {
        t.fail(at + ": refused, but whole-block counts must be taken: " + e.what());
      }
    }
    if (t.bad > bad) continue;
    for (size_t n : {size_t{1}, G - 1, G + 1, 3 * G + 5}) {
      const std::string at = fmt("%s count %zu", typeName(dt), n);
      if (c.encodedBytes(n, dt) != 0) t.fail(at + ": encodedBytes is not 0");
      const std::vector<uint8_t> in = toType(makeInput("normal", n, opt.seed + 900 + n, G), dt);
      const size_t room = c.encodedBytes(countFor(c, n), dt);  // what a taken count would write
      Guarded pay(room, 0x00), out(n * typeSize(dt), 0x00), acc(n * 4, 0x00), dec(room, 0x00);
      refused(at + " encode", [&] { c.encode(in.data(), dt, n, pay.data()); });
      refused(at + " decode", [&] { c.decode(pay.data(), n, dt, out.data()); });
      refused(at + " decodeAccumulate",
              [&] { c.decodeAccumulate(pay.data(), n, dt, acc.floats()); });
      const void* ins[2] = {pay.data(), nullptr};
      refused(at + " decodeReduceEncode", [&] {
        c.decodeReduceEncode(ins, 2, 1, in.data(), dt, n, 1.0f, dec.data(), acc.floats(),
                             out.data());
      });
      for (const Guarded* g : {&pay, &out, &acc, &dec})
        if (g->body() != Guarded(g->size(), 0x00).body() || !g->guardDamage().empty())
          t.fail(at + ": a refused operation wrote into its buffers");
    }
  }
  return {"partial_blocks", t.bad == 0,
          fmt("refused (whole blocks of %zu only)  calls %zu  violations %zu", G, t.calls, t.bad),
          t.first};
}

CheckResult checkPartialBlocks(const Codec& c, const Options& opt) {
  if (refusesPartialBlocks(c)) return checkRefusedPartialBlocks(c, opt);
  ErrStats s;
  std::string counts;
  for (size_t n : {size_t{1}, size_t{7}, size_t{33}, size_t{1000003}}) {
    if (opt.quick && n > 1000) continue;
    counts += (counts.empty() ? "" : ",") + std::to_string(n);
    const std::vector<float> v = makeInput("student_t3", n, opt.seed * 1000 + 100 + n, c.blockElems());
    for (cocclDataType_t dt : kTypes) {
      if (!c.supportsType(dt)) continue;
      roundTrip(c, v, dt, fmt("count %zu %s", n, typeName(dt)), s);
    }
  }
  CheckResult r = fromStats("partial_blocks", s);
  r.numbers = "counts " + counts + "  " + r.numbers;
  return r;
}

// Four blocks of N(0,1); block 1 holds NaN, +Inf and -Inf. Lossless codecs must give the input
// back bit for bit (NaN payloads included); lossy codecs with COCCL_CODEC_CAP_NONFINITE must put
// NaN/+Inf/-Inf where they were, keep the other elements finite and the other blocks within
// their bound. Without the capability the values are unspecified: only the guards (no write out
// of bounds) and the blocks without non-finite input (their bound) are checked.
CheckResult checkNonFinite(const Codec& c, const Options& opt) {
  CheckResult r;
  r.name = "non_finite";
  const size_t G = c.blockElems();
  const size_t n = countFor(c, 4 * G + (G > 1 ? 5 : 12));
  const size_t b1 = G > 1 ? G : 4;  // first element of the poisoned block
  const size_t span = G > 1 ? G : 4;
  const size_t posNan = b1 + span / 5, posPinf = b1 + span / 2, posNinf = b1 + span - 1;
  std::vector<float> v = makeInput("normal", n, opt.seed * 1000 + 200, G);
  uint32_t nanBits = 0x7fc00123u;  // a quiet NaN with a payload
  std::memcpy(&v[posNan], &nanBits, 4);
  v[posPinf] = std::numeric_limits<float>::infinity();
  v[posNinf] = -std::numeric_limits<float>::infinity();
  size_t cases = 0, wrong = 0;
  ErrStats s;
  auto wrongAt = [&](const std::string& what) {
    ++wrong;
    if (r.detail.empty()) r.detail = what;
  };
  const bool declared = (c.capabilities() & COCCL_CODEC_CAP_NONFINITE) != 0;
  for (cocclDataType_t dt : kTypes) {
    if (!c.supportsType(dt)) continue;
    ++cases;
    const std::vector<uint8_t> in = toType(v, dt);
    Guarded pay(c.encodedBytes(n, dt), 0x00);
    c.encode(in.data(), dt, n, pay.data());
    Guarded dec(n * typeSize(dt), 0x00);
    c.decode(pay.data(), n, dt, dec.data());
    const std::string dmg = pay.guardDamage() + dec.guardDamage();
    if (!dmg.empty()) wrongAt(std::string(typeName(dt)) + ": " + dmg);
    if (c.lossless()) {
      if (std::memcmp(in.data(), dec.data(), in.size()) != 0)
        wrongAt(std::string(typeName(dt)) + ": lossless codec: decode(encode(x)) != x bitwise");
      continue;
    }
    const std::vector<float> x = toFloat(in.data(), dt, n), y = toFloat(dec.data(), dt, n);
    for (size_t i = 0; i < n && declared; ++i) {
      const std::string at = fmt("%s element %zu (input %g, decoded %g)", typeName(dt), i, x[i], y[i]);
      if (std::isnan(x[i])) {
        if (!std::isnan(y[i])) wrongAt(at + ": NaN lost");
      } else if (std::isinf(x[i])) {
        if (y[i] != x[i]) wrongAt(at + ": Inf lost");
      } else if (!std::isfinite(y[i])) {
        wrongAt(at + ": finite input decoded non-finite");
      }
    }
    // blocks other than the poisoned one keep their bound (whole blocks: G divides b1)
    if (G > 1) {
      std::vector<float> e0(x.begin(), x.begin() + b1), g0(y.begin(), y.begin() + b1);
      addErrors(c, e0, g0, std::string(typeName(dt)) + " block 0", s);
      std::vector<float> e2(x.begin() + b1 + G, x.end()), g2(y.begin() + b1 + G, y.end());
      addErrors(c, e2, g2, std::string(typeName(dt)) + " blocks 2..", s);
    }
  }
  if (s.violations > 0) wrongAt(s.firstViolation);
  r.pass = wrong == 0;
  r.numbers = fmt("types %zu  NaN@%zu +Inf@%zu -Inf@%zu  %s  wrong %zu", cases, posNan, posPinf,
                  posNinf,
                  c.lossless() ? "bitwise"
                               : (declared ? "positions kept" : "CAP_NONFINITE not declared: "
                                                                "memory safety and other blocks only"),
                  wrong);
  return r;
}

CheckResult checkRealData(const Codec& c, const Options& opt) {
  CheckResult r;
  r.name = "roundtrip real_data";
  // the manifest (tp_tensors_manifest.json) or the directory holding it
  std::string dir = opt.manifest;
  if (dir.size() >= 5 && dir.compare(dir.size() - 5, 5, ".json") == 0) {
    const size_t slash = dir.find_last_of('/');
    dir = slash == std::string::npos ? "." : dir.substr(0, slash);
  }
  const std::vector<test::TpCase> cases = test::loadTpCases(dir);
  ErrStats s;
  size_t tensors = 0;
  for (const test::TpCase& tc : cases) {
    for (size_t rank = 0; rank < tc.ranks.size(); ++rank) {
      const std::vector<uint16_t>& t = tc.ranks[rank];
      std::vector<float> v =
          toFloat(reinterpret_cast<const uint8_t*>(t.data()), cocclBfloat16, t.size());
      v.resize(countFor(c, v.size()), 0.0f);  // zeros to whole blocks if the codec needs them
      ++tensors;
      for (cocclDataType_t dt : {cocclBfloat16, cocclFloat32}) {
        if (opt.quick && dt == cocclFloat32) continue;
        if (c.supportsType(dt)) roundTrip(c, v, dt, fmt("%s rank %zu %s", tc.name.c_str(), rank, typeName(dt)), s);
      }
    }
  }
  r = fromStats(r.name, s);
  r.numbers = fmt("%zu tensors  ", tensors) + r.numbers;
  if (tensors == 0) {
    r.pass = false;
    r.detail = "no tensors in " + opt.manifest;
  }
  return r;
}

}  // namespace check
}  // namespace coccl
