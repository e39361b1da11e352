#include "collectives/policy_json.h"

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

namespace coccl {
namespace {

// Where the lexer has read to: an input iterator over the text that records the furthest
// character dereferenced. nlohmann's lexer reads at most one character past a token (numbers),
// so a SAX event's line is that of the last non-blank character read.
struct ReadMark {
  const char* furthest = nullptr;
};

class MarkingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;
  MarkingIterator(const char* p, ReadMark* mark) : p_(p), mark_(mark) {}
  reference operator*() const {
    if (p_ > mark_->furthest) mark_->furthest = p_;
    return *p_;
  }
  MarkingIterator& operator++() {
    ++p_;
    return *this;
  }
  MarkingIterator operator++(int) {
    MarkingIterator t = *this;
    ++p_;
    return t;
  }
  bool operator==(const MarkingIterator& o) const { return p_ == o.p_; }
  bool operator!=(const MarkingIterator& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  ReadMark* mark_;
};

class TreeBuilder {
 public:
  using json = nlohmann::json;
  TreeBuilder(const std::string& text, const ReadMark* mark) : text_(text), mark_(mark) {
    lineStarts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') lineStarts_.push_back(i + 1);
  }

  bool null() { return add(JsonValue{}); }
  bool boolean(bool v) {
    JsonValue x;
    x.kind = JsonValue::Bool;
    x.b = v;
    return add(std::move(x));
  }
  bool number_integer(json::number_integer_t v) {
    JsonValue x;
    x.kind = JsonValue::Int;
    x.i = v;
    return add(std::move(x));
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (v > static_cast<uint64_t>(INT64_MAX)) return outOfRange(std::to_string(v));
    JsonValue x;
    x.kind = JsonValue::Int;
    x.i = static_cast<int64_t>(v);
    return add(std::move(x));
  }
  bool number_float(json::number_float_t v, const json::string_t& text) {
    // An integer beyond int64 / uint64 arrives here too: say so, not "a fraction".
    if (text.find_first_of(".eE") == std::string::npos) return outOfRange(text);
    JsonValue x;
    x.kind = JsonValue::Float;
    x.f = v;
    return add(std::move(x));
  }
  bool outOfRange(const std::string& integer) {
    return fail(line(), "the integer " + integer + " is out of range (" +
                            std::to_string(INT64_MIN) + " .. " + std::to_string(INT64_MAX) + ")");
  }
  bool string(json::string_t& v) {
    // A NUL would cut the name short where it is used as a C string ("int8\u0000junk").
    if (v.find('\0') != std::string::npos)
      return fail(line(), "a string holds a NUL character (\\u0000)");
    JsonValue x;
    x.kind = JsonValue::String;
    x.s = v;
    return add(std::move(x));
  }
  bool binary(json::binary_t&) { return fail(line(), "binary values are not JSON"); }
  bool start_object(std::size_t) { return open(JsonValue::Object); }
  bool start_array(std::size_t) { return open(JsonValue::Array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(json::string_t& k) {
    Frame& f = stack_.back();
    const int l = line();
    for (size_t i = 0; i < f.value.members.size(); ++i)
      if (f.value.members[i].first == k)
        return fail(l, "duplicate key \"" + k + "\" (first on line " +
                           std::to_string(f.value.keyLines[i]) + ")");
    f.key = k;
    f.keyLine = l;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    // "[json.exception.parse_error.101] parse error at line 3, column 5: syntax error ...":
    // keep what follows "parse error at ".
    const std::string w = ex.what();
    const std::string at = "parse error at line ";
    const size_t p = w.find(at);
    if (p != std::string::npos) {
      error_ = w.substr(p + at.size() - 5);
    } else {
      const size_t off = position ? position - 1 : 0;
      error_ = "line " +
               std::to_string(std::upper_bound(lineStarts_.begin(), lineStarts_.end(), off) -
                              lineStarts_.begin()) +
               ": " + w;
    }
    return false;
  }

  bool done(JsonValue* out) {
    if (!error_.empty() || !haveRoot_) return false;
    *out = std::move(root_);
    return true;
  }
  const std::string& error() const { return error_; }

 private:
  struct Frame {
    JsonValue value;
    std::string key;
    int keyLine = 0;
  };

  // The line of the last non-blank character the lexer has read.
  int line() const {
    const char* base = text_.data();
    const char* p = mark_->furthest ? mark_->furthest : base;
    while (p > base && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) --p;
    const size_t off = static_cast<size_t>(p - base);
    return static_cast<int>(std::upper_bound(lineStarts_.begin(), lineStarts_.end(), off) -
                            lineStarts_.begin());
  }
  bool fail(int l, const std::string& what) {
    if (error_.empty()) error_ = "line " + std::to_string(l) + ": " + what;
    return false;
  }
  bool add(JsonValue x) {
    if (x.line == 0) x.line = line();
    if (stack_.empty()) {
      root_ = std::move(x);
      haveRoot_ = true;
      return true;
    }
    Frame& f = stack_.back();
    if (f.value.kind == JsonValue::Array) {
      f.value.items.push_back(std::move(x));
    } else {
      f.value.members.emplace_back(std::move(f.key), std::move(x));
      f.value.keyLines.push_back(f.keyLine);
    }
    return true;
  }
  bool open(JsonValue::Kind k) {
    if (static_cast<int>(stack_.size()) >= kMaxJsonDepth)
      return fail(line(), "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    Frame f;
    f.value.kind = k;
    f.value.line = line();
    stack_.push_back(std::move(f));
    return true;
  }
  bool close() {
    JsonValue v = std::move(stack_.back().value);
    stack_.pop_back();
    return add(std::move(v));
  }

  const std::string& text_;
  const ReadMark* mark_;
  std::vector<size_t> lineStarts_;
  std::vector<Frame> stack_;
  JsonValue root_;
  bool haveRoot_ = false;
  std::string error_;
};

}  // namespace

const char* jsonKindName(JsonValue::Kind k) {
  switch (k) {
    case JsonValue::Null: return "null";
    case JsonValue::Bool: return "a boolean";
    case JsonValue::Int: return "an integer";
    case JsonValue::Float: return "a number with a fraction";
    case JsonValue::String: return "a string";
    case JsonValue::Array: return "a list";
    case JsonValue::Object: return "an object";
  }
  return "?";
}

bool parseJsonWithLines(const std::string& text, JsonValue* out, std::string* error) {
  ReadMark mark;
  TreeBuilder b(text, &mark);
  MarkingIterator first(text.data(), &mark), last(text.data() + text.size(), &mark);
  const bool ok = nlohmann::json::sax_parse(first, last, &b, nlohmann::json::input_format_t::json,
                                            /*strict=*/true, /*ignore_comments=*/true);
  if (ok && b.done(out)) return true;
  *error = b.error().empty() ? std::string("not a JSON document") : b.error();
  return false;
}

}  // namespace coccl
