#include "tp_data.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tuple>

#ifndef COCCL_DATA_DIR
#define COCCL_DATA_DIR ""
#endif

namespace coccl {
namespace test {

namespace {
bool hasManifest(const std::string& dir) {
  return !dir.empty() && std::ifstream(dir + "/tp_tensors_manifest.json").good();
}
}  // namespace

std::string findTpDataDir() {
  const char* env = std::getenv("COCCL_DATA_DIR");
  for (std::string d :
       {std::string(env ? env : ""), std::string(COCCL_DATA_DIR), std::string("/work/shared/data")})
    if (hasManifest(d)) return d;
  return "";
}

std::vector<TpCase> loadTpCases(const std::string& dir) {
  std::ifstream mf(dir + "/tp_tensors_manifest.json");
  if (!mf) throw std::runtime_error("cannot open manifest in " + dir);
  nlohmann::json m = nlohmann::json::parse(mf);
  using Key = std::tuple<int, int, std::string, std::string>;  // step, layer, module, kind
  std::map<Key, TpCase> cases;
  std::map<std::string, std::vector<char>> files;
  for (const auto& t : m.at("tensors")) {
    if (t.at("dtype") != "bf16") throw std::runtime_error("expected bf16 tensors");
    const std::string file = t.at("file");
    auto it = files.find(file);
    if (it == files.end()) {
      std::ifstream f(dir + "/" + file, std::ios::binary);
      if (!f) throw std::runtime_error("cannot open " + dir + "/" + file);
      it = files.emplace(file, std::vector<char>(std::istreambuf_iterator<char>(f), {})).first;
    }
    size_t off = t.at("offset"), nbytes = t.at("nbytes");
    if (off + nbytes > it->second.size()) throw std::runtime_error("tensor outside " + file);
    Key key{t.at("step"), t.at("layer"), t.at("module"), t.at("kind")};
    TpCase& c = cases[key];
    c.name = "step" + std::to_string(std::get<0>(key)) + "/L" + std::to_string(std::get<1>(key)) +
             "/" + std::get<2>(key) + "/" + std::get<3>(key);
    size_t rank = t.at("tp_rank"), tp = t.at("tp_size");
    c.ranks.resize(tp);
    std::vector<uint16_t>& v = c.ranks.at(rank);
    v.resize(nbytes / 2);
    std::memcpy(v.data(), it->second.data() + off, nbytes);
  }
  std::vector<TpCase> out;
  for (auto& kv : cases) out.push_back(std::move(kv.second));
  return out;
}

}  // namespace test
}  // namespace coccl
