// Codec spec strings: "name[:key=value,...]". Whitespace around names, keys and values is
// ignored; keys may not repeat; every error throws Error(cocclInvalidArgument) naming the spec
// and the bad part.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace coccl {
namespace codec_detail {

struct ParsedSpec {
  std::string text;  // the spec as given
  std::string name;
  std::vector<std::pair<std::string, std::string>> params;
};

ParsedSpec parseSpec(const std::string& spec);

// `text` for an error message: as it is up to 64 characters, else its first 64 and how long it
// was (a megabyte-long spec must not become a megabyte-long message).
std::string quoted(const std::string& text);

// Reads typed parameters of one codec; finish() rejects keys nobody asked for.
class SpecReader {
 public:
  explicit SpecReader(const ParsedSpec& spec) : spec_(spec), used_(spec.params.size(), false) {}

  // An integer that must be one of `allowed` (printed in the message when it is not).
  long getIntOneOf(const char* key, long def, const std::vector<long>& allowed);
  // A finite float in [lo, hi].
  float getFloat(const char* key, float def, double lo, double hi);
  // One of `allowed` words.
  std::string getWord(const char* key, const std::string& def,
                      const std::vector<std::string>& allowed);
  // Throws if a key was not read. `keys` lists the codec's keys for the message.
  void finish(const char* keys) const;

 private:
  const std::string* find(const char* key);
  const ParsedSpec& spec_;
  std::vector<bool> used_;
};

// Shortest decimal that reads back as the same float ("1e-06", "0.001", "1000").
std::string formatFloat(float v);

}  // namespace codec_detail
}  // namespace coccl
