// The emulated node of the device-collective tests (emu/): p ranks' regions in host memory,
// their host states and contexts, as CudaIpcExecutor sets them up (dev_types.h), and the
// planner of every rank.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "collectives/cuda_ipc/dev_types.h"
#include "collectives/cuda_ipc/plan.h"

namespace coccl_emu {

using namespace coccl::dev;

struct World {
  int p, nb;
  uint64_t blockBytes = kCallBlockBytes;  // Planner::blockBytes / minBlocks of the run
  int minBlocks = kMinCallBlocks;
  Layout lay;
  std::vector<std::unique_ptr<uint64_t[]>> mem;  // regions (8-byte aligned, zeroed)
  std::vector<HostState> host;
  std::vector<Ctx> ctx;
  World(int p_, int nb_, uint64_t staging) : p(p_), nb(nb_) {
    lay = makeLayout(p, nb, staging);
    host.resize(static_cast<size_t>(p));
    ctx.resize(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r) {
      mem.emplace_back(new uint64_t[lay.total / 8 + 1]());
      std::memset(&host[static_cast<size_t>(r)], 0, sizeof(HostState));
    }
    for (int r = 0; r < p; ++r) {
      Ctx& c = ctx[static_cast<size_t>(r)];
      c = Ctx{};
      c.rank = r;
      c.nranks = p;
      c.nblocks = nb;
      c.timeoutNs = (std::getenv("COCCL_EMU_TIMEOUT_S") ? std::strtoull(std::getenv("COCCL_EMU_TIMEOUT_S"), nullptr, 10) : 60ull) * 1000000000ull;
      c.lay = lay;
      c.host = &host[static_cast<size_t>(r)];
      for (int q = 0; q < p; ++q) c.base[q] = reinterpret_cast<char*>(mem[static_cast<size_t>(q)].get());
    }
  }
  Planner planner(int r) const {
    Planner pl;
    pl.lay = lay;
    pl.nblocks = nb;
    pl.nranks = p;
    pl.rank = r;
    pl.blockBytes = blockBytes;
    pl.minBlocks = minBlocks;
    return pl;
  }
};

}  // namespace coccl_emu
