// Real-data mode (--input MANIFEST): real tensor-parallel payloads through coccl, case by case.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "args.h"
#include "runtime.h"

namespace cocclperf {

struct TensorRef {
  std::string file;  // absolute or relative to the working directory (resolved)
  size_t offset = 0;
  size_t nbytes = 0;
};

// One (step, layer, module, kind): tensors[r] is tp_rank r's tensor.
struct RealCase {
  int step = 0;
  int layer = 0;
  std::string module;
  std::string kind;
  std::vector<TensorRef> tensors;
  size_t count = 0;  // elements of each tensor
};

struct Manifest {
  std::string path;
  int tpSize = 0;
  std::vector<RealCase> cases;  // in the manifest's order of first appearance
};

// Parses and validates a manifest (bf16 tensors, tp_size tensors per case, equal sizes).
// False with *err on any problem.
bool loadManifest(const std::string& path, Manifest* m, std::string* err);

// Runs every case on this rank; rank 0 prints. Returns the exit status (same on every rank).
int runRealData(const Rank& rk, const Options& o, const Launch& l, const Manifest& m);

}  // namespace cocclperf
