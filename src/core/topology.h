// Topology facts from hwloc that the algorithms use: which NUMA node this rank runs on and
// which ranks share a host. Gathered once per communicator through the bootstrap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace coccl {

class Bootstrap;

struct LocalTopology {
  std::string hostname;
  uint64_t hostHash = 0;  // hash of hostname + boot id: equal for ranks on one host
  int numaNode = -1;      // NUMA node of the calling thread's current CPU (hwloc), -1 unknown
  int numaNodes = 0;      // NUMA nodes on this host
  int cores = 0;          // physical cores on this host
};

// Facts about the calling thread's host (hwloc topology loaded once per process).
LocalTopology localTopology();

struct CommTopology {
  std::vector<LocalTopology> ranks;  // indexed by rank
  int localRank = 0;                 // index among ranks with the same hostHash
  int localRanks = 1;                // ranks on this host
  int nodes = 1;                     // distinct hosts
  bool sameHost(int a, int b) const { return ranks[a].hostHash == ranks[b].hostHash; }
};

// All-gathers every rank's LocalTopology through the bootstrap.
CommTopology gatherTopology(Bootstrap& bootstrap);

}  // namespace coccl
