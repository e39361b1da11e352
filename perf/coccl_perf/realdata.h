// Real-data mode (--input MANIFEST): real tensors through coccl, case by case. Two manifest
// formats: tp_tensors (shared/data/tp_tensors_manifest.json: tp_size tensors a case, tp_rank r's
// on rank r) and pp_activations (tests/data/pp_activations/manifest.json: rows x row tensors,
// one a case, every rank uses it).
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

// One (step, layer, module, kind): tensors[r] is tp_rank r's tensor (tp_tensors), or the one
// tensor of every rank (pp_activations).
struct RealCase {
  int step = 0;
  int layer = -1;  // -1: not in the manifest (printed "-")
  std::string module = "-";
  std::string kind;
  std::vector<TensorRef> tensors;
  size_t count = 0;  // elements of each tensor
  size_t row = 0;    // elements a row (pp_activations' `row`: the hidden size), 0 when unknown
  const TensorRef& of(int rank) const {
    return tensors.size() == 1 ? tensors[0] : tensors[static_cast<size_t>(rank)];
  }
};

struct Manifest {
  std::string path;
  std::string format;  // "tp_tensors" or "pp_activations"
  int tpSize = 0;      // tp_tensors: the world size; 0 (pp_activations): any world size
  std::vector<RealCase> cases;  // in the manifest's order of first appearance
};

// Parses and validates a manifest (bf16 tensors; tp_tensors: tp_size tensors per case of equal
// sizes). False with *err on any problem.
bool loadManifest(const std::string& path, Manifest* m, std::string* err);

// Runs every case on this rank; rank 0 prints. Returns the exit status (same on every rank).
int runRealData(const Rank& rk, const Options& o, const Launch& l, const Manifest& m);

}  // namespace cocclperf
