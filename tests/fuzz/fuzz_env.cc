// Fuzzes the environment parser: parseEnvValue (and envChoice) for every row of
// src/core/env_rows.inc with arbitrary values. The first byte picks the row, the rest is the
// value. Checked: an accepted Int is in [min, max] and its stored text is its decimal; a
// rejected Int below min with clampLow sets the minimum; an accepted String is one of the
// row's choices (or any value when it has none); a rejection names what is accepted.
#include <cinttypes>

#include "core/env.h"
#include "core/error.h"
#include "fuzz_util.h"

using namespace coccl;
using coccl::fuzz::fail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const EnvRow& row = kEnvRows[data[0] % kEnvRowCount];
  const std::string value(reinterpret_cast<const char*>(data + 1), size - 1);
  if (findEnvRow(row.name) != &row) fail(format("findEnvRow(%s) is another row", row.name));
  std::string str, accepted;
  int64_t num = INT64_MIN;
  const bool ok = parseEnvValue(row, value, &str, &num, &accepted);
  if (row.kind == EnvRow::Int) {
    if (ok) {
      if (num < row.minInt || num > row.maxInt)
        fail(format("%s: accepted %" PRId64 " outside [%" PRId64 ", %" PRId64 "]", row.name, num,
                    row.minInt, row.maxInt));
      if (str != std::to_string(num)) fail(format("%s: stored text '%s'", row.name, str.c_str()));
    } else {
      if (accepted.empty()) fail(format("%s: rejected without saying what it accepts", row.name));
      if (num != INT64_MIN && !(row.clampLow && num == row.minInt))
        fail(format("%s: a rejected value set %" PRId64, row.name, num));
    }
  } else {
    std::string canonical;
    const bool choice = envChoice(row, value, &canonical);
    if (ok != choice) fail(format("%s: parseEnvValue and envChoice disagree", row.name));
    if (ok && str != canonical) fail(format("%s: '%s' vs '%s'", row.name, str.c_str(),
                                            canonical.c_str()));
    if (!ok && accepted.empty())
      fail(format("%s: rejected without saying what it accepts", row.name));
    if (ok && *row.choices) {  // the stored form is one of the choices as spelled in the row
      const std::string choices = std::string("|") + row.choices + "|";
      if (choices.find("|" + str + "|") == std::string::npos)
        fail(format("%s: '%s' is not one of %s", row.name, str.c_str(), row.choices));
    }
  }
  return 0;
}
