#include "core/agree.h"

#include <cstring>

#include "core/error.h"
#include "core/log.h"

namespace coccl {
namespace {
constexpr size_t kWhy = 400;
constexpr size_t kMaxValues = 16;

struct Vote {
  int32_t ok;
  char why[kWhy + 1];
};
}  // namespace

std::string agree(Bootstrap& bs, const std::string& failure) {
  std::vector<Vote> all(static_cast<size_t>(bs.nranks()));
  Vote& me = all[static_cast<size_t>(bs.rank())];
  std::memset(&me, 0, sizeof(me));
  me.ok = failure.empty() ? 1 : 0;
  std::strncpy(me.why, failure.c_str(), kWhy);
  bs.allGather(all.data(), sizeof(Vote));
  for (int r = 0; r < bs.nranks(); ++r) {
    Vote& v = all[static_cast<size_t>(r)];
    v.why[kWhy] = '\0';
    if (!v.ok) return format("rank %d: %s", r, v.why[0] ? v.why : "failed");
  }
  return "";
}

std::string agreeValues(Bootstrap& bs, const std::vector<AgreedValue>& values) {
  COCCL_CHECK_INTERNAL(values.size() <= kMaxValues, "agreeValues: %zu values (at most %zu)",
                       values.size(), kMaxValues);
  const size_t n = values.size();
  std::vector<uint64_t> all(static_cast<size_t>(bs.nranks()) * kMaxValues, 0);
  for (size_t i = 0; i < n; ++i)
    all[static_cast<size_t>(bs.rank()) * kMaxValues + i] = values[i].value;
  bs.allGather(all.data(), kMaxValues * sizeof(uint64_t));
  for (int r = 1; r < bs.nranks(); ++r)
    for (size_t i = 0; i < n; ++i) {
      const uint64_t v0 = all[i], vr = all[static_cast<size_t>(r) * kMaxValues + i];
      if (v0 != vr)
        return format("%s differs across ranks (%llu on rank 0, %llu on rank %d)",
                      values[i].name, static_cast<unsigned long long>(v0),
                      static_cast<unsigned long long>(vr), r);
    }
  return "";
}

}  // namespace coccl
