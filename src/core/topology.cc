#include "core/topology.h"

#include <hwloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

#include "core/bootstrap.h"
#include "core/error.h"
#include "core/log.h"

namespace coccl {

namespace {

// The process's hwloc topology, loaded once. hwloc allows concurrent read-only use of a loaded
// topology; the mutex only serialises our queries, which are cheap.
struct Hwloc {
  hwloc_topology_t topo = nullptr;
  bool ok = false;
  std::mutex mu;
};

Hwloc& hwloc() {
  static Hwloc* h = [] {
    auto* x = new Hwloc();  // never freed: used until process exit, from any thread
    if (hwloc_topology_init(&x->topo) == 0) {
      if (hwloc_topology_load(x->topo) == 0) {
        x->ok = true;
      } else {
        COCCL_WARN("hwloc_topology_load failed; NUMA information unavailable");
        hwloc_topology_destroy(x->topo);
        x->topo = nullptr;
      }
    } else {
      COCCL_WARN("hwloc_topology_init failed; NUMA information unavailable");
      x->topo = nullptr;
    }
    return x;
  }();
  return *h;
}

uint64_t fnv1a(const std::string& s, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string bootId() {
  std::string id;
  if (FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    char buf[128] = {0};
    if (std::fgets(buf, sizeof(buf), f)) id = buf;
    std::fclose(f);
  }
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

int currentNumaNode(hwloc_topology_t topo) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!set) return -1;
  int node = -1;
  if (hwloc_get_last_cpu_location(topo, set, HWLOC_CPUBIND_THREAD) == 0 &&
      !hwloc_bitmap_iszero(set)) {
    hwloc_obj_t pu = hwloc_get_obj_inside_cpuset_by_type(topo, set, HWLOC_OBJ_PU, 0);
    if (pu) {
      hwloc_obj_t numa = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_NUMANODE, pu);
      if (numa) {
        node = static_cast<int>(numa->os_index);
      } else {
        // hwloc 2 keeps NUMA nodes out of the CPU tree (memory children): take the first
        // NUMA node whose cpuset holds this PU.
        hwloc_obj_t n = nullptr;
        while ((n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n)) != nullptr) {
          if (n->cpuset && hwloc_bitmap_isincluded(pu->cpuset, n->cpuset)) {
            node = static_cast<int>(n->os_index);
            break;
          }
        }
      }
    }
  }
  hwloc_bitmap_free(set);
  return node;
}

// Fixed-size record exchanged by gatherTopology.
struct TopologyWire {
  uint64_t hostHash;
  int32_t numaNode;
  int32_t numaNodes;
  int32_t cores;
  int32_t pad;
  char hostname[64];
};

}  // namespace

LocalTopology localTopology() {
  LocalTopology t;
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "unknown");
  t.hostname = host;
  t.hostHash = fnv1a(bootId(), fnv1a(t.hostname));
  if (t.hostHash == 0) t.hostHash = 1;

  Hwloc& h = hwloc();
  if (h.ok) {
    std::lock_guard<std::mutex> g(h.mu);
    t.numaNode = currentNumaNode(h.topo);
    t.numaNodes = hwloc_get_nbobjs_by_type(h.topo, HWLOC_OBJ_NUMANODE);
    t.cores = hwloc_get_nbobjs_by_type(h.topo, HWLOC_OBJ_CORE);
    if (t.cores <= 0) t.cores = hwloc_get_nbobjs_by_type(h.topo, HWLOC_OBJ_PU);
  }
  if (t.numaNodes <= 0) t.numaNodes = 1;
  if (t.cores <= 0) {
    long n = ::sysconf(_SC_NPROCESSORS_ONLN);
    t.cores = n > 0 ? static_cast<int>(n) : 1;
  }
  return t;
}

CommTopology gatherTopology(Bootstrap& bootstrap) {
  const int n = bootstrap.nranks(), me = bootstrap.rank();
  LocalTopology local = localTopology();
  std::vector<TopologyWire> all(static_cast<size_t>(n));
  TopologyWire& w = all[me];
  std::memset(&w, 0, sizeof(w));
  w.hostHash = local.hostHash;
  w.numaNode = local.numaNode;
  w.numaNodes = local.numaNodes;
  w.cores = local.cores;
  std::strncpy(w.hostname, local.hostname.c_str(), sizeof(w.hostname) - 1);
  bootstrap.allGather(all.data(), sizeof(TopologyWire));

  CommTopology ct;
  ct.ranks.resize(static_cast<size_t>(n));
  std::set<uint64_t> hosts;
  ct.localRank = 0;
  ct.localRanks = 0;
  for (int r = 0; r < n; ++r) {
    const TopologyWire& x = all[r];
    LocalTopology& t = ct.ranks[r];
    t.hostHash = x.hostHash;
    t.numaNode = x.numaNode;
    t.numaNodes = x.numaNodes;
    t.cores = x.cores;
    t.hostname.assign(x.hostname, strnlen(x.hostname, sizeof(x.hostname)));
    hosts.insert(x.hostHash);
    if (x.hostHash == local.hostHash) {
      if (r < me) ++ct.localRank;
      ++ct.localRanks;
    }
  }
  ct.ranks[me] = local;  // full hostname for ourselves
  ct.nodes = static_cast<int>(hosts.size());
  COCCL_INFO(kLogInit,
             "topology: rank %d/%d host %s numa %d/%d cores %d, local rank %d/%d, %d node(s)", me,
             n, local.hostname.c_str(), local.numaNode, local.numaNodes, local.cores, ct.localRank,
             ct.localRanks, ct.nodes);
  return ct;
}

}  // namespace coccl
