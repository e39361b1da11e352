// The battery's decode_accumulate check: the host decodeAccumulate of n payloads in one call
// (what the plug-in ABI passes, and what a codec's device operation of n payloads must equal)
// against n calls of one payload each, bit for bit, n = 2, 3, 8, 64, onto a non-zero
// accumulator, with the accumulator's bounds guarded. coccl's host path calls it with one
// payload at a time and its device path with several, so an implementation that, say, adds only
// ins[0] would otherwise pass every other check.
#include <algorithm>
#include <cstring>
#include <memory>
#include <set>

#include "battery.h"
#include "battery_util.h"

namespace coccl {
namespace check {

using namespace detail;

CheckResult checkDecodeAccumulate(const Codec& c, const Options& opt) {
  const size_t G = std::max<size_t>(c.blockElems(), 1);
  Tally t;
  for (cocclDataType_t dt : {cocclFloat32, cocclBfloat16, cocclFloat16}) {
    if (!c.supportsType(dt)) continue;
    const std::set<size_t> counts = {countFor(c, 1), countFor(c, G + 1), countFor(c, 3 * G + 5)};
    for (size_t count : counts) {
      for (int n : {2, 3, 8, 64}) {
        // every buffer the codec writes is guarded (a codec that overruns fails bytes_written;
        // here it must not corrupt the battery)
        std::vector<std::unique_ptr<Guarded>> pay;
        std::vector<const void*> ins(static_cast<size_t>(n));
        std::string encodeDamage;
        for (int k = 0; k < n; ++k) {
          const std::vector<uint8_t> in = toType(
              makeInput(k % 2 ? "student_t3" : "normal", count, opt.seed + 700 + 10 * k, G), dt);
          pay.push_back(std::make_unique<Guarded>(c.encodedBytes(count, dt), 0x00));
          c.encode(in.data(), dt, count, pay.back()->data());
          if (encodeDamage.empty()) encodeDamage = pay.back()->guardDamage();
          ins[static_cast<size_t>(k)] = pay.back()->data();
        }
        const std::string at = fmt("%s count %zu n %d", typeName(dt), count, n);
        if (!encodeDamage.empty()) {
          t.fail(at + ": encode payload: " + encodeDamage);
          continue;
        }
        Guarded one(count * 4, 0x00), many(count * 4, 0x00);
        for (size_t i = 0; i < count; ++i)
          one.floats()[i] = many.floats()[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
        for (int k = 0; k < n; ++k) c.decodeAccumulate(ins[k], count, dt, one.floats());
        c.decodeAccumulateMany(ins.data(), n, count, dt, many.floats());
        t.calls += static_cast<size_t>(n) + 1;
        const std::string damage = many.guardDamage() + one.guardDamage();
        if (!damage.empty()) {
          t.fail(at + ": accumulator: " + damage);
        } else if (std::memcmp(one.data(), many.data(), count * 4) != 0) {
          size_t i = 0;
          while (i < count && std::memcmp(one.floats() + i, many.floats() + i, 4) == 0) ++i;
          t.fail(fmt("%s: %d payloads in one call differ from %d calls of one (element %zu: %g, "
                   "want %g)",
                   at.c_str(), n, n, i, static_cast<double>(many.floats()[i]),
                   static_cast<double>(one.floats()[i])));
        }
      }
    }
  }
  return {"decode_accumulate", t.bad == 0,
          fmt("calls %zu  (n 2, 3, 8, 64 payloads in one call vs one by one)  mismatches %zu",
              t.calls, t.bad),
          t.first};
}

}  // namespace check
}  // namespace coccl
