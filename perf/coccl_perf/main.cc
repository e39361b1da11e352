// coccl_perf: nccl-tests-style benchmark and verification tool for coccl.
//
//   coccl_perf COLLECTIVE [nccl-tests flags] [--codec SPEC] [--json FILE] [--input MANIFEST]
//
// See `coccl_perf --help` and README.md in this directory.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "args.h"
#include "devmem.h"
#include "realdata.h"
#include "runtime.h"
#include "sweep.h"

int main(int argc, char** argv) {
  using namespace cocclperf;
  Options o;
  const int rc = parseArgs(argc, argv, &o);
  if (rc >= 0) return rc;

  // Before any coccl call: the library reads COCCL_COMM_ID once.
  Launch launch;
  std::string err;
  if (!detectLaunch(&launch, &err)) {
    std::fprintf(stderr, "coccl_perf: %s\n", err.c_str());
    return 1;
  }

  Manifest manifest;
  if (!o.input.empty()) {
    if (!loadManifest(o.input, &manifest, &err)) {
      std::fprintf(stderr, "coccl_perf: %s\n", err.c_str());
      return 1;
    }
    // tp_tensors: the world is tp_size ranks; pp_activations: any, by default two (the two
    // stages of a pipeline boundary).
    const int world = manifest.tpSize ? manifest.tpSize : 2;
    if (!o.threadsGiven && world % launch.nProcs == 0) o.nThreads = world / launch.nProcs;
    if (manifest.tpSize && launch.nProcs * o.nThreads != manifest.tpSize) {
      std::fprintf(stderr, "coccl_perf: world size %d (%d process(es) x %d thread(s)) != "
                           "manifest tp_size %d\n",
                   launch.nProcs * o.nThreads, launch.nProcs, o.nThreads, manifest.tpSize);
      return 1;
    }
  }

  // Thread ranks on device buffers share one CUDA context per GPU: under lazy module loading
  // (CUDA's default) a kernel loaded on first launch may wait for another rank's running
  // kernel, which waits for it; the library refuses CUDA IPC there. Loaded
  // eagerly instead (before any CUDA call; an explicit CUDA_MODULE_LOADING is kept).
  if (o.mem == "device" && o.nThreads > 1) setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  std::function<int(const Rank&)> beforeInit;
  if (o.mem == "device")
    beforeInit = [](const Rank& rk) { return selectDevice(rk.proc, rk.thread, rk.nThreads); };
  return runRanks(launch, o.nThreads, [&](Rank& rk) {
    return o.input.empty() ? runSweep(rk, o, launch) : runRealData(rk, o, launch, manifest);
  }, beforeInit);
}
