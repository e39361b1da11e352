// The reference of the two-level (hier:) arithmetic for the CPU tests of tests/collectives/staged:
// SDP4Bit's scheme as the host path computes it (collectives/host/hierarchical.cc: per node the
// local inputs in local-rank order, the owner's raw; then the nodes' partial sums in node order,
// the owner node's exact; from -0; AllReduce encodes the total once and every rank decodes it).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "codecs/codec.h"
#include "collectives/host/reduce.h"
#include "collectives/layout.h"
#include "core/dtype.h"

namespace coccl {
namespace test {

struct Case {
  int p, L;
  const char* intra;
  const char* inter;
  bool allReduce;
  cocclDataType_t dt;
  cocclRedOp_t op;
  size_t count;  // AllReduce: elements; ReduceScatter: per rank
  bool inPlace;
};

inline std::string name(const Case& c) {
  return std::to_string(c.p / c.L) + "x" + std::to_string(c.L) + " " + c.intra + "/" + c.inter +
         (c.allReduce ? " AllReduce " : " ReduceScatter ") + dtypeName(c.dt) +
         (c.op == cocclAvg ? " avg" : " sum") + " count " + std::to_string(c.count) +
         (c.inPlace ? " in place" : "");
}

// The reference: every rank's output, from all inputs, piece by piece (the host's chunks), and
// the bytes each rank sends. level1 (optional): every rank's output as it would be with an exact
// inter-node level (the nodes' fp32 partial sums added in fp64, scaled for AVG): the intra
// level's share of the error.
inline std::vector<std::vector<char>> reference(const Case& c, const Codec& intra,
                                                const Codec& inter,
                                                const std::vector<std::vector<char>>& in,
                                                size_t chunkBytes, std::vector<size_t>* wire,
                                                std::vector<std::vector<double>>* level1 = nullptr) {
  const int p = c.p, L = c.L, N = p / L;
  const size_t es = dtypeSize(c.dt);
  const size_t align = std::max(intra.blockElems(), inter.blockElems());
  const auto shards = c.allReduce ? balancedShards(c.count, p, align) : equalShards(c.count, p);
  const size_t chunk = chunkElems(chunkBytes, es, align);
  const float scale = c.op == cocclAvg ? 1.0f / static_cast<float>(p) : 1.0f;
  const size_t outCount = c.count;
  std::vector<std::vector<char>> out(static_cast<size_t>(p), std::vector<char>(outCount * es));
  if (level1) level1->assign(static_cast<size_t>(p), std::vector<double>(outCount, 0.0));
  wire->assign(static_cast<size_t>(p), 0);
  size_t K = 0;
  for (const Range& s : shards) K = std::max(K, numChunks(s.count, chunk));
  std::vector<char> payload;
  for (size_t q = 0; q < K; ++q)
    for (int j = 0; j < p; ++j) {
      const Range pr = chunkOf(shards[static_cast<size_t>(j)], chunk, q);
      if (!pr.count) continue;
      const int jn = j / L, jl = j % L;
      // Per node n, the partial sum of the node's inputs of piece pr (rank (n, jl)'s is raw).
      std::vector<std::vector<float>> part(static_cast<size_t>(N));
      for (int n = 0; n < N; ++n) {
        std::vector<float>& a = part[static_cast<size_t>(n)];
        a.assign(pr.count, -0.0f);
        for (int l = 0; l < L; ++l) {
          const char* x = in[static_cast<size_t>(n * L + l)].data() + pr.begin * es;
          if (l == jl) {
            accumulateToFloat(x, c.dt, pr.count, a.data());
          } else {
            payload.assign(intra.encodedBytes(pr.count, c.dt), 0);
            intra.encode(x, c.dt, pr.count, payload.data());
            intra.decodeAccumulate(payload.data(), pr.count, c.dt, a.data());
            (*wire)[static_cast<size_t>(n * L + l)] += payload.size();
          }
        }
      }
      if (level1) {
        for (int r = 0; r < p; ++r) {
          if (!c.allReduce && r != j) continue;
          const size_t at = c.allReduce ? pr.begin : pr.begin - shards[static_cast<size_t>(j)].begin;
          for (size_t i = 0; i < pr.count; ++i) {
            double s = 0;
            for (int n = 0; n < N; ++n) s += part[static_cast<size_t>(n)][i];
            (*level1)[static_cast<size_t>(r)][at + i] = s * scale;
          }
        }
      }
      std::vector<float> total(pr.count, -0.0f);
      for (int n = 0; n < N; ++n) {
        const std::vector<float>& a = part[static_cast<size_t>(n)];
        if (n == jn) {
          for (size_t i = 0; i < pr.count; ++i) total[i] += a[i];
        } else {
          payload.assign(inter.encodedBytes(pr.count, cocclFloat32), 0);
          inter.encode(a.data(), cocclFloat32, pr.count, payload.data());
          inter.decodeAccumulate(payload.data(), pr.count, cocclFloat32, total.data());
          (*wire)[static_cast<size_t>(n * L + jl)] += payload.size();
        }
      }
      if (scale != 1.0f) scaleFloats(total.data(), total.size(), scale);
      if (!c.allReduce) {
        convertFromFloat(total.data(), pr.count, c.dt,
                         out[static_cast<size_t>(j)].data() +
                             (pr.begin - shards[static_cast<size_t>(j)].begin) * es);
        continue;
      }
      payload.assign(inter.encodedBytes(pr.count, cocclFloat32), 0);
      inter.encode(total.data(), cocclFloat32, pr.count, payload.data());
      // The owner sends it to the N - 1 other nodes; each of the N holders of column jl sends
      // the column's payloads to its L - 1 local peers.
      (*wire)[static_cast<size_t>(j)] += static_cast<size_t>(N - 1) * payload.size();
      for (int n = 0; n < N; ++n)
        (*wire)[static_cast<size_t>(n * L + jl)] += static_cast<size_t>(L - 1) * payload.size();
      for (int r = 0; r < p; ++r)
        inter.decode(payload.data(), pr.count, c.dt,
                     out[static_cast<size_t>(r)].data() + pr.begin * es);
    }
  return out;
}

}  // namespace test
}  // namespace coccl
