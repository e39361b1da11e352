// The battery's structural checks (bytes written, determinism, decodeReduceEncode, random
// payloads), runBattery and the table.
#include "battery.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <random>
#include <set>
#include <thread>

#include "battery_util.h"

namespace coccl {
namespace check {

using namespace detail;

namespace {

std::vector<size_t> testCounts(const Codec& c) {
  const size_t G = c.blockElems();
  std::set<size_t> s;
  for (size_t n : {size_t{1}, size_t{7}, size_t{33}, size_t{1000}, G + 1, 3 * G + 5, G - 1, G})
    if (n > 0) s.insert(countFor(c, n));
  return {s.begin(), s.end()};
}

// The reference owner step, from the codec's own encode / decode / decodeAccumulate in the order
// codec.h documents: acc = sum over r in rank order (the owner's raw input converted, the others
// decoded), acc *= scale, out = encode(acc), decoded = decode(out). The sum starts from -0.0 (the
// identity of fp32 addition, so the first term is taken exactly). The payload is encoded from
// fp32 when its size does not depend on the input type, else from acc rounded to dt.
void referenceOwnerStep(const Codec& c, const std::vector<std::vector<uint8_t>>& ins, int self,
                        const std::vector<uint8_t>& selfIn, cocclDataType_t dt, size_t n,
                        float scale, std::vector<uint8_t>& out, std::vector<uint8_t>& decoded) {
  // every buffer a codec writes is padded (Guarded): a codec that overruns fails bytes_written,
  // it does not corrupt the battery
  Guarded accBuf(n * 4, 0x00);
  float* acc = accBuf.floats();
  for (size_t i = 0; i < n; ++i) acc[i] = -0.0f;
  for (int r = 0; r < static_cast<int>(ins.size()); ++r) {
    if (r == self) {
      for (size_t i = 0; i < n; ++i) acc[i] = acc[i] + elemAt(selfIn.data(), dt, i);
    } else {
      c.decodeAccumulate(ins[r].data(), n, dt, acc);
    }
  }
  if (scale != 1.0f)
    for (size_t i = 0; i < n; ++i) acc[i] = acc[i] * scale;
  Guarded pay(c.encodedBytes(n, dt), 0x00);
  if (c.encodedBytes(n, cocclFloat32) == pay.size()) {
    c.encode(acc, cocclFloat32, n, pay.data());
  } else {
    const std::vector<uint8_t> t = toType(std::vector<float>(acc, acc + n), dt);
    c.encode(t.data(), dt, n, pay.data());
  }
  Guarded dec(n * typeSize(dt), 0x00);
  c.decode(pay.data(), n, dt, dec.data());
  out = pay.body();
  decoded = dec.body();
}

struct OwnerCase {
  std::vector<std::vector<uint8_t>> raw, ins;  // each rank's raw input and its payload
};

// p ranks' inputs of n elements; poison: rank r's element r * 37 % n is NaN, +Inf or -Inf (r % 3).
OwnerCase makeOwnerCase(const Codec& c, int p, cocclDataType_t dt, size_t n, uint64_t seed,
                        bool poison = false) {
  OwnerCase oc;
  for (int r = 0; r < p; ++r) {
    std::vector<float> v = makeInput(r % 2 ? "student_t3" : "normal", n, seed + r, c.blockElems());
    for (float& x : v) x = x * (1.0f + 0.5f * static_cast<float>(r));
    if (poison) {
      const float inf = std::numeric_limits<float>::infinity();
      v[(static_cast<size_t>(r) * 37) % n] = r % 3 == 0 ? std::nanf("") : (r % 3 == 1 ? inf : -inf);
    }
    oc.raw.push_back(toType(v, dt));
    Guarded pay(c.encodedBytes(n, dt), 0x00);
    c.encode(oc.raw.back().data(), dt, n, pay.data());
    oc.ins.push_back(pay.body());
  }
  return oc;
}

std::vector<const void*> insPointers(const OwnerCase& oc, int self) {
  std::vector<const void*> p;
  for (size_t r = 0; r < oc.ins.size(); ++r)
    p.push_back(static_cast<int>(r) == self ? nullptr : oc.ins[r].data());
  return p;
}

// Runs fn(chunk) for chunks [0, n) on `threads` threads taking chunks in turn (1: on the
// calling thread, in order).
template <class Fn>
void parallelChunks(size_t n, int threads, Fn fn) {
  if (threads <= 1) {
    for (size_t k = 0; k < n; ++k) fn(k);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      size_t k = next.fetch_add(1);
      while (k < n) {
        fn(k);
        k = next.fetch_add(1);
      }
    });
  for (std::thread& th : pool) th.join();
}

}  // namespace

CheckResult checkBytesWritten(const Codec& c, const Options& opt) {
  Tally t;
  for (cocclDataType_t dt : kTypes) {
    if (!c.supportsType(dt)) continue;
    for (size_t n : testCounts(c)) {
      const std::string at = fmt("%s count %zu", typeName(dt), n);
      const std::vector<uint8_t> in = toType(makeInput("normal", n, opt.seed + n, c.blockElems()), dt);
      const size_t eb = c.encodedBytes(n, dt);
      std::vector<uint8_t> bodies[4][2];
      for (int f = 0; f < 2; ++f) {
        const uint8_t flip = f ? 0xFF : 0x00;
        Guarded pay(eb, flip), dec(n * typeSize(dt), flip);
        c.encode(in.data(), dt, n, pay.data());
        t.guards(pay, at + ": encode payload");
        c.decode(pay.data(), n, dt, dec.data());
        t.guards(dec, at + ": decode output");
        bodies[0][f] = pay.body();
        bodies[1][f] = dec.body();
        Guarded acc(n * 4, flip);
        std::memset(acc.data(), 0, n * 4);
        c.decodeAccumulate(pay.data(), n, dt, acc.floats());
        t.guards(acc, at + ": decodeAccumulate accumulator");
        OwnerCase oc = makeOwnerCase(c, 3, dt, n, opt.seed + 7 * n);
        std::vector<const void*> ins = insPointers(oc, 1);
        Guarded out(eb, flip), outDec(n * typeSize(dt), flip), scratch(n * 4, flip);
        c.decodeReduceEncode(ins.data(), 3, 1, oc.raw[1].data(), dt, n, 1.0f, out.data(),
                             scratch.floats(), outDec.data());
        t.guards(out, at + ": decodeReduceEncode payload");
        t.guards(outDec, at + ": decodeReduceEncode decoded output");
        t.guards(scratch, at + ": decodeReduceEncode scratch");
        bodies[2][f] = out.body();
        bodies[3][f] = outDec.body();
        t.calls += 4;
      }
      static const char* kWhat[4] = {"encode payload", "decode output", "decodeReduceEncode payload",
                                     "decodeReduceEncode decoded output"};
      for (int k = 0; k < 4; ++k)
        if (bodies[k][0] != bodies[k][1]) t.fail(at + ": " + kWhat[k] + ": some bytes left unwritten");
    }
  }
  CheckResult r{"bytes_written", t.bad == 0,
                fmt("calls %zu  guard %zu B/side x2 patterns  violations %zu", t.calls, Guarded::kGuard, t.bad),
                t.first};
  return r;
}

CheckResult checkDeterminism(const Codec& c, const Options& opt) {
  Tally t;
  const size_t G = std::max<size_t>(c.blockElems(), 1);
  const size_t chunk = ((8192 + G - 1) / G) * G;
  const size_t nChunks = opt.quick ? 32 : 128;
  const int threads = std::max(opt.threads, 2);
  for (cocclDataType_t dt : kTypes) {
    if (!c.supportsType(dt)) continue;
    const size_t n = chunk * nChunks;
    const std::vector<uint8_t> in = toType(makeInput("student_t3", n, opt.seed + 300, G), dt);
    // chunk payloads cb bytes apart plus slack (an overrunning codec fails bytes_written only)
    const size_t cb = c.encodedBytes(chunk, dt) + Guarded::kGuard, es = typeSize(dt);
    // in chunk order, or (reversed) from the last chunk to the first
    auto encodeAll = [&](int nt, bool reversed) {
      std::vector<uint8_t> out(cb * nChunks);
      parallelChunks(nChunks, nt, [&](size_t i) {
        const size_t k = reversed ? nChunks - 1 - i : i;
        c.encode(in.data() + k * chunk * es, dt, chunk, out.data() + k * cb);
      });
      return out;
    };
    const std::vector<uint8_t> a = encodeAll(1, false), b = encodeAll(1, true);
    const std::vector<uint8_t> m = encodeAll(threads, false), m2 = encodeAll(threads, true);
    t.calls += 4 * nChunks;
    if (a != b) t.fail(fmt("%s: encode: two runs on 1 thread differ", typeName(dt)));
    // the same chunk encoded twice in a row (catches state carried from one call to the next)
    for (size_t k = 0; k < 4; ++k) {
      Guarded p0(cb, 0x00), p1(cb, 0x00);
      c.encode(in.data() + k * chunk * es, dt, chunk, p0.data());
      c.encode(in.data() + k * chunk * es, dt, chunk, p1.data());
      t.calls += 2;
      if (p0.body() != p1.body())
        t.fail(fmt("%s: encode: chunk %zu encoded twice in a row differs", typeName(dt), k));
    }
    if (a != m || a != m2) t.fail(fmt("%s: encode: 1 thread and %d threads differ", typeName(dt), threads));
    auto decodeAll = [&](int nt) {
      std::vector<uint8_t> out(nChunks * (chunk * es + Guarded::kGuard));
      parallelChunks(nChunks, nt, [&](size_t k) {
        c.decode(a.data() + k * cb, chunk, dt, out.data() + k * (chunk * es + Guarded::kGuard));
      });
      return out;
    };
    t.calls += 2 * nChunks;
    if (decodeAll(1) != decodeAll(threads))
      t.fail(fmt("%s: decode: 1 thread and %d threads differ", typeName(dt), threads));
    // the owner step, twice
    const size_t dn = countFor(c, 3 * G + 5);
    OwnerCase oc = makeOwnerCase(c, 4, dt, dn, opt.seed + 400);
    std::vector<const void*> ins = insPointers(oc, 2);
    std::vector<uint8_t> o[2], d[2];
    for (int k = 0; k < 2; ++k) {
      Guarded out(c.encodedBytes(dn, dt), 0x00), dec(dn * es, 0x00), scratch(dn * 4, 0x00);
      c.decodeReduceEncode(ins.data(), 4, 2, oc.raw[2].data(), dt, dn, 0.25f, out.data(),
                           scratch.floats(), dec.data());
      o[k] = out.body();
      d[k] = dec.body();
      ++t.calls;
    }
    if (o[0] != o[1] || d[0] != d[1]) t.fail(fmt("%s: decodeReduceEncode: two runs differ", typeName(dt)));
  }
  return {"determinism", t.bad == 0,
          fmt("calls %zu  chunks %zu x %zu  threads 1 vs %d  mismatches %zu", t.calls, nChunks, chunk,
              threads, t.bad),
          t.first};
}

CheckResult checkDecodeReduceEncode(const Codec& c, const Options& opt) {
  Tally t;
  const bool ownOrder = (c.capabilities() & COCCL_CODEC_CAP_OWN_SUM_ORDER) != 0;
  const size_t G = std::max<size_t>(c.blockElems(), 1);
  const size_t big = opt.quick ? 4096 : 65536;
  for (cocclDataType_t dt : kTypes) {
    if (!c.supportsType(dt)) continue;
    // two sizes of finite input, then non-finite values in several ranks' inputs
    for (int k = 0; k < 3; ++k) {
      const size_t n = countFor(c, k == 0 ? 3 * G + 5 : k == 1 ? big : 3 * G + 6);
      const bool poison = k == 2;
      for (int p = 1; p <= 4; ++p) {
        for (int self : std::set<int>{0, p / 2, p - 1}) {
          const OwnerCase oc = makeOwnerCase(c, p, dt, n, opt.seed + 500 + 10 * p + self, poison);
          const std::vector<const void*> ins = insPointers(oc, self);
          for (float scale : {1.0f, 1.0f / static_cast<float>(p)}) {
            std::vector<uint8_t> refOut, refDec;
            referenceOwnerStep(c, oc.ins, self, oc.raw[self], dt, n, scale, refOut, refDec);
            Guarded g(refOut.size(), 0x00), gd(refDec.size(), 0x00), g2(refOut.size(), 0x00);
            Guarded scratch(n * 4, 0x00);
            c.decodeReduceEncode(ins.data(), p, self, oc.raw[self].data(), dt, n, scale, g.data(),
                                 scratch.floats(), gd.data());
            c.decodeReduceEncode(ins.data(), p, self, oc.raw[self].data(), dt, n, scale, g2.data(),
                                 scratch.floats(), nullptr);
            const std::vector<uint8_t> out = g.body(), dec = gd.body(), out2 = g2.body();
            ++t.calls;
            const std::string at = fmt("%s count %zu p %d self %d scale %g%s", typeName(dt), n, p,
                                       self, scale, poison ? " (NaN/Inf input)" : "");
            if (!ownOrder) {
              if (out != refOut) t.fail(at + ": payload differs from decode-sum-encode");
              else if (dec != refDec) t.fail(at + ": decoded output differs from decode(payload)");
              else if (out2 != refOut) t.fail(at + ": payload differs when decoded is null");
              continue;
            }
            // an own sum order: decoded == decode(out), and as close to the exact sum as the
            // reference's encoding (non-finite elements where the reference has them)
            // (from g, whose guard bytes follow the payload: a codec that reads past its
            // payload is bounded_reads' finding, not a fault of this check)
            Guarded redec(refDec.size(), 0x00);
            c.decode(g.data(), n, dt, redec.data());
            if (dec != redec.body()) {
              t.fail(at + ": decoded output differs from decode(payload)");
              continue;
            }
            if (out2 != out) {
              t.fail(at + ": payload differs when decoded is null");
              continue;
            }
            const std::vector<float> got = toFloat(dec.data(), dt, n),
                                     want = toFloat(refDec.data(), dt, n);
            double eGot = 0, eRef = 0, norm = 0;
            bool classes = true;
            for (size_t i = 0; i < n; ++i) {
              if (!std::isfinite(want[i]) || !std::isfinite(got[i])) {  // the same NaN / +-Inf
                const bool same = std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i];
                classes = classes && same;
                continue;
              }
              double exact = 0;
              for (int r = 0; r < p; ++r) exact += elemAt(oc.raw[r].data(), dt, i);
              exact *= scale;
              if (!std::isfinite(exact)) continue;
              eGot += (got[i] - exact) * (got[i] - exact);
              eRef += (want[i] - exact) * (want[i] - exact);
              norm += exact * exact;
            }
            if (!classes) {
              t.fail(at + ": non-finite elements differ from decode-sum-encode's");
            } else if (std::sqrt(eGot) > 1.05 * std::sqrt(eRef) + 1e-6 * std::sqrt(norm)) {
              t.fail(fmt("%s: error %.3e against the exact sum, decode-sum-encode's %.3e", at.c_str(),
                         std::sqrt(eGot / std::max(norm, 1e-300)),
                         std::sqrt(eRef / std::max(norm, 1e-300))));
            }
          }
        }
      }
    }
  }
  return {"decode_reduce_encode", t.bad == 0,
          fmt("cases %zu (p 1..4, self first/mid/last, scale 1, 1/p, NaN/Inf%s)  mismatches %zu",
              t.calls, ownOrder ? ", own sum order: error vs decode-sum-encode's" : "", t.bad),
          t.first};
}

CheckResult checkRandomPayloads(const Codec& c, const Options& opt) {
  Tally t;
  size_t threw = 0;
  const size_t G = std::max<size_t>(c.blockElems(), 1);
  const size_t iters = opt.quick ? 300 : 3000;
  std::mt19937_64 rng(opt.seed + 600);
  std::vector<cocclDataType_t> types;
  for (cocclDataType_t dt : kTypes)
    if (c.supportsType(dt)) types.push_back(dt);
  for (size_t it = 0; it < iters && !types.empty(); ++it) {
    const cocclDataType_t dt = types[it % types.size()];
    const size_t n = countFor(c, (it % 10 == 9) ? 1 + rng() % 20000 : 1 + rng() % (4 * G + 3));
    const uint8_t flip = (it & 1) ? 0xFF : 0x00;
    const size_t eb = c.encodedBytes(n, dt);
    Guarded a(eb, flip), b(eb, flip);
    for (size_t i = 0; i < eb; ++i) {
      a.data()[i] = static_cast<uint8_t>(rng());
      b.data()[i] = static_cast<uint8_t>(rng());
    }
    const std::string at = fmt("payload %zu (%s count %zu)", it, typeName(dt), n);
    try {
      Guarded dec(n * typeSize(dt), flip), acc(n * 4, flip);
      c.decode(a.data(), n, dt, dec.data());
      t.guards(dec, at + ": decode output");
      std::memset(acc.data(), 0, n * 4);
      c.decodeAccumulate(a.data(), n, dt, acc.floats());
      t.guards(acc, at + ": decodeAccumulate accumulator");
      const void* ins[2] = {a.data(), b.data()};
      const std::vector<uint8_t> own = toType(makeInput("normal", n, it, G), dt);
      Guarded out(eb, flip), outDec(n * typeSize(dt), flip), scratch(n * 4, flip);
      c.decodeReduceEncode(ins, 2, static_cast<int>(it % 2), own.data(), dt, n, 0.5f, out.data(),
                           scratch.floats(), outDec.data());
      t.guards(out, at + ": decodeReduceEncode payload");
      t.guards(outDec, at + ": decodeReduceEncode decoded output");
      t.guards(scratch, at + ": decodeReduceEncode scratch");
    } catch (const std::exception&) {
      ++threw;  // refusing a payload is allowed; crashing or writing out of bounds is not
    }
    t.guards(a, at + ": input payload");
    t.guards(b, at + ": input payload");
    t.calls += 3;
  }
  return {"random_payloads", t.bad == 0,
          fmt("payloads %zu  calls %zu  threw %zu  out-of-bounds writes %zu", iters, t.calls, threw, t.bad),
          t.first};
}

std::vector<CheckResult> runBattery(const Codec& c, const Options& opt) {
  std::vector<CheckResult> out;
  auto guarded = [&](const char* name, auto fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      out.push_back({name, false, "threw", e.what()});
    }
  };
  guarded("bytes_written", [&] { out.push_back(checkBytesWritten(c, opt)); });
  guarded("determinism", [&] { out.push_back(checkDeterminism(c, opt)); });
  guarded("roundtrip", [&] {
    for (CheckResult& r : checkRoundTrip(c, opt)) out.push_back(std::move(r));
  });
  if (!opt.manifest.empty()) guarded("roundtrip real_data", [&] { out.push_back(checkRealData(c, opt)); });
  guarded("partial_blocks", [&] { out.push_back(checkPartialBlocks(c, opt)); });
  guarded("non_finite", [&] { out.push_back(checkNonFinite(c, opt)); });
  guarded("decode_accumulate", [&] { out.push_back(checkDecodeAccumulate(c, opt)); });
  guarded("decode_reduce_encode", [&] { out.push_back(checkDecodeReduceEncode(c, opt)); });
  guarded("random_payloads", [&] { out.push_back(checkRandomPayloads(c, opt)); });
  guarded("bounded_reads", [&] { out.push_back(checkBoundedReads(c, opt)); });
  if (!opt.against.empty())
    guarded("same_bytes_as_reference", [&] { out.push_back(checkAgainst(c, opt)); });
  return out;
}

bool allPassed(const std::vector<CheckResult>& results) {
  return std::all_of(results.begin(), results.end(), [](const CheckResult& r) { return r.pass; });
}

std::string formatTable(const Codec& c, const std::vector<CheckResult>& results) {
  size_t w = 5;
  for (const CheckResult& r : results) w = std::max(w, r.name.size());
  std::string s = fmt("# coccl_codec_check %s (format %u, block %zu, %s)\n", c.spec().c_str(),
                      c.formatVersion(), c.blockElems(), c.lossless() ? "lossless" : "lossy");
  s += fmt("%-*s  %-6s  %s\n", static_cast<int>(w), "check", "result", "measured");
  for (const CheckResult& r : results)
    s += fmt("%-*s  %-6s  %s\n", static_cast<int>(w), r.name.c_str(), r.pass ? "PASS" : "FAIL",
             r.numbers.c_str());
  for (const CheckResult& r : results)
    if (!r.pass) s += "FAIL " + r.name + ": " + r.detail + "\n";
  size_t failed = 0;
  for (const CheckResult& r : results) failed += r.pass ? 0 : 1;
  s += fmt("# %zu checks, %zu failed\n", results.size(), failed);
  return s;
}

}  // namespace check
}  // namespace coccl
