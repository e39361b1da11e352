#include "gpu_test_util.h"

#include <cuda_runtime.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <tuple>

#ifndef COCCL_DATA_DIR
#define COCCL_DATA_DIR ""
#endif

namespace coccl {
namespace test {

bool gpuAvailable() {
  static const bool ok = [] {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      std::printf("[codec gpu] no CUDA device (%s): the GPU tests skip\n", cudaGetErrorString(e));
      return false;
    }
    if (n > 0) {
      cudaDeviceProp prop;
      if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
        std::printf("[codec gpu] device 0: %s, sm_%d%d, %d SMs\n", prop.name, prop.major,
                    prop.minor, prop.multiProcessorCount);
    }
    return n > 0;
  }();
  return ok;
}

void cudaCheck(int err, const char* what) {
  if (err != 0)
    throw std::runtime_error(std::string(what) + ": " +
                             cudaGetErrorString(static_cast<cudaError_t>(err)));
}

DevBuf::DevBuf(size_t bytes, int fill) : n_(bytes) {
  cudaCheck(cudaMalloc(&p_, bytes > 0 ? bytes : 1), "cudaMalloc");
  cudaCheck(cudaMemset(p_, fill, bytes > 0 ? bytes : 1), "cudaMemset");
}

DevBuf::~DevBuf() {
  if (p_ != nullptr) (void)cudaFree(p_);
}

DevBuf DevBuf::from(const std::vector<uint8_t>& host, size_t extra, size_t offset) {
  DevBuf b(host.size() + extra + offset);
  if (!host.empty())
    cudaCheck(cudaMemcpy(b.p_ + offset, host.data(), host.size(), cudaMemcpyHostToDevice),
              "cudaMemcpy H2D");
  return b;
}

std::vector<uint8_t> DevBuf::download(size_t offset, size_t bytes) const {
  std::vector<uint8_t> h(bytes);
  cudaCheck(cudaDeviceSynchronize(), "kernel");
  if (bytes > 0)
    cudaCheck(cudaMemcpy(h.data(), p_ + offset, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  return h;
}

void deviceSync() {
  cudaCheck(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

namespace {
bool hasManifest(const std::string& dir) {
  return !dir.empty() && std::ifstream(dir + "/tp_tensors_manifest.json").good();
}
}  // namespace

std::string tpDataDir() {
  const char* env = std::getenv("COCCL_DATA_DIR");
  for (const std::string& d :
       {std::string(env ? env : ""), std::string(COCCL_DATA_DIR), std::string("/work/shared/data")})
    if (hasManifest(d)) return d;
  return "";
}

// The manifest's "tensors" array holds flat objects ("shape" is the only array inside them):
// a few regular expressions read it without a JSON library.
std::vector<TpCase> loadTpCases(const std::string& dir) {
  std::ifstream mf(dir + "/tp_tensors_manifest.json");
  std::stringstream ss;
  ss << mf.rdbuf();
  const std::string text = ss.str();
  const size_t at = text.find("\"tensors\"");
  if (at == std::string::npos) throw std::runtime_error("no tensors in the manifest");
  const std::regex objRe("\\{[^{}]*\\}");
  const std::regex strRe("\"(\\w+)\"\\s*:\\s*\"([^\"]*)\"");
  const std::regex numRe("\"(\\w+)\"\\s*:\\s*(-?[0-9]+)");
  using Key = std::tuple<long, long, std::string, std::string>;
  std::map<Key, TpCase> cases;
  std::map<std::string, std::vector<char>> files;
  const std::string tail = text.substr(at);
  for (auto it = std::sregex_iterator(tail.begin(), tail.end(), objRe);
       it != std::sregex_iterator(); ++it) {
    const std::string obj = it->str();
    std::map<std::string, std::string> s;
    std::map<std::string, long> n;
    for (auto m = std::sregex_iterator(obj.begin(), obj.end(), strRe); m != std::sregex_iterator();
         ++m)
      s[(*m)[1]] = (*m)[2];
    for (auto m = std::sregex_iterator(obj.begin(), obj.end(), numRe); m != std::sregex_iterator();
         ++m)
      n[(*m)[1]] = std::stol((*m)[2]);
    if (!s.count("file") || !n.count("offset") || !n.count("nbytes")) continue;
    if (s["dtype"] != "bf16") throw std::runtime_error("expected bf16 tensors");
    auto f = files.find(s["file"]);
    if (f == files.end()) {
      std::ifstream in(dir + "/" + s["file"], std::ios::binary);
      if (!in) throw std::runtime_error("cannot open " + dir + "/" + s["file"]);
      f = files.emplace(s["file"], std::vector<char>(std::istreambuf_iterator<char>(in), {})).first;
    }
    const size_t off = static_cast<size_t>(n["offset"]), bytes = static_cast<size_t>(n["nbytes"]);
    if (off + bytes > f->second.size()) throw std::runtime_error("tensor outside " + s["file"]);
    const Key key{n["step"], n["layer"], s["module"], s["kind"]};
    TpCase& c = cases[key];
    c.name = "step" + std::to_string(n["step"]) + "/L" + std::to_string(n["layer"]) + "/" +
             s["module"] + "/" + s["kind"];
    const size_t rank = static_cast<size_t>(n["tp_rank"]);
    if (c.ranks.size() <= rank) c.ranks.resize(rank + 1);
    c.ranks[rank].resize(bytes / 2);
    std::memcpy(c.ranks[rank].data(), f->second.data() + off, bytes);
  }
  std::vector<TpCase> out;
  for (auto& kv : cases) out.push_back(std::move(kv.second));
  return out;
}

}  // namespace test
}  // namespace coccl
