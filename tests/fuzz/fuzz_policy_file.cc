// Fuzzes the policy file parser (src/collectives/policy_file.h, policy_json.h) on arbitrary
// text: parsePolicyText either returns rules or throws coccl::Error (cocclInvalidArgument) whose
// bounded message names the file and a line; a file that parses describes every rule with a
// line inside the text and its canonical codec spec parses again.
#include <algorithm>

#include "collectives/policy_file.h"
#include "core/error.h"
#include "fuzz_util.h"

using namespace coccl;
using coccl::fuzz::fail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const int lines = 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  try {
    const PolicyFile f = parsePolicyText(text, "fuzz.json");
    for (const PolicyRule& r : f.rules) {
      if (r.line < 1 || r.line > lines) fail(format("rule line %d outside 1..%d", r.line, lines));
      if (r.bytesFrom >= r.bytesBelow) fail("a rule with an empty byte range parsed");
      if (!r.colls || !r.dtypes) fail("a rule that matches nothing parsed");
      (void)r.callText();
      const std::string spec = r.entry.spec();
      if (spec != "none" && !r.entry.inter) {
        CodecPtr again = makeCodec(spec);
        if (again->spec() != spec) fail("a rule's canonical spec reparses differently");
      }
    }
  } catch (const Error& e) {
    const std::string m = e.what();
    if (e.code() != cocclInvalidArgument) fail(format("parsePolicyText threw code %d", e.code()));
    if (m.size() > 8192) fail("an unbounded message");
    if (m.rfind("policy file 'fuzz.json' line ", 0) != 0)
      fail("a message that does not name the file and line: " + m.substr(0, 200));
  }
  return 0;
}
