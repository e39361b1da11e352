// coccl_env_doc: README's "Environment" table from the rows of src/core/env_rows.inc.
//   coccl_env_doc                 prints the table
//   coccl_env_doc --check FILE    exit 1 when FILE's table (between the markers) differs
//   coccl_env_doc --write FILE    rewrites FILE's table
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "core/env.h"

namespace {

const char kBegin[] = "<!-- BEGIN coccl_env_doc (generated from src/core/env_rows.inc: do not edit) -->\n";
const char kEnd[] = "<!-- END coccl_env_doc -->\n";

bool readFile(const char* path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string table = coccl::envMarkdownTable();
  if (argc == 1) {
    std::fputs(table.c_str(), stdout);
    return 0;
  }
  const bool check = argc == 3 && std::strcmp(argv[1], "--check") == 0;
  const bool write = argc == 3 && std::strcmp(argv[1], "--write") == 0;
  if (!check && !write) {
    std::fprintf(stderr, "usage: %s [--check|--write README.md]\n", argv[0]);
    return 2;
  }
  std::string text;
  if (!readFile(argv[2], &text)) {
    std::fprintf(stderr, "coccl_env_doc: cannot read %s\n", argv[2]);
    return 2;
  }
  const size_t b = text.find(kBegin), e = text.find(kEnd);
  if (b == std::string::npos || e == std::string::npos || e < b) {
    std::fprintf(stderr, "coccl_env_doc: %s has no table markers:\n%s%s", argv[2], kBegin, kEnd);
    return 2;
  }
  const size_t from = b + std::strlen(kBegin);
  const std::string current = text.substr(from, e - from);
  if (check) {
    if (current == table) return 0;
    std::fprintf(stderr,
                 "coccl_env_doc: the Environment table of %s differs from src/core/env_rows.inc; "
                 "regenerate it with: coccl_env_doc --write %s\nexpected:\n%s",
                 argv[2], argv[2], table.c_str());
    return 1;
  }
  text.replace(from, e - from, table);
  std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
  out << text;
  return out ? 0 : 2;
}
