// The JSON reader of policy files (COCCL_POLICY, docs/policy.md): nlohmann-json's SAX parser
// building a small tree in which every value knows the line it is on, so that an error about a
// key or a value names its line. Comments (// and /* */) are allowed; duplicate keys, nesting
// deeper than kMaxDepth and syntax errors are errors.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace coccl {

struct JsonValue {
  enum Kind { Null, Bool, Int, Float, String, Array, Object };
  Kind kind = Null;
  int line = 0;             // 1-based line of the value (of its opening bracket for containers)
  bool b = false;           // Bool
  int64_t i = 0;            // Int (integers beyond int64 are a parse error)
  double f = 0;             // Float
  std::string s;            // String
  std::vector<JsonValue> items;                            // Array, in order
  std::vector<std::pair<std::string, JsonValue>> members;  // Object, in file order
  std::vector<int> keyLines;                               // Object: the line of each key
};

// "an integer", "a string", ... (for error messages).
const char* jsonKindName(JsonValue::Kind k);

constexpr int kMaxJsonDepth = 32;

// Parses `text`. On success returns true with the tree in *out; else false with *error set to
// "line L, column C: <what>" (syntax) or "line L: <what>" (duplicate key, too deep).
bool parseJsonWithLines(const std::string& text, JsonValue* out, std::string* error);

}  // namespace coccl
