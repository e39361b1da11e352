// Loader of the real tensor-parallel payloads (../shared/data, see its README): 24 cases of
// 4 TP ranks, each a [256, 768] bf16 tensor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace coccl {
namespace test {

struct TpCase {
  std::string name;                          // "step20/L1/proj/fwd_rowparallel"
  std::vector<std::vector<uint16_t>> ranks;  // bf16 bits, one vector per TP rank
};

// The data directory: $COCCL_DATA_DIR if it holds tp_tensors_manifest.json, else the
// directory compiled in (CMake cache COCCL_DATA_DIR), else /work/shared/data; "" if none.
std::string findTpDataDir();

// All cases of the manifest in dir, ranks in tp_rank order. Throws std::runtime_error.
std::vector<TpCase> loadTpCases(const std::string& dir);

}  // namespace test
}  // namespace coccl
