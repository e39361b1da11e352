// Helpers for compressed-collective tests: synthetic per-rank inputs (deterministic, so each
// rank can compute the fp64 reference alone), relative L2 error, cross-rank identity check.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coccl.h"
#include "harness/harness.h"

namespace coccl::test {

// Rank `rank`'s input: N(0,1) values with a few outlier channels, stored in dt (bytes) and
// its exact value as double.
struct RankData {
  std::vector<uint8_t> bytes;
  std::vector<double> exact;
};
RankData syntheticInput(cocclDataType_t dt, size_t count, int rank, uint64_t seed);

// Converts a typed (fp32/fp16/bf16) buffer to doubles.
std::vector<double> toDoubles(cocclDataType_t dt, const void* buf, size_t count);

double relL2(const std::vector<double>& got, const std::vector<double>& want);

// Elements of `got` (decoded) outside the codec's bound for `want` (block statistics over the
// codec's block, zero padding included, as cocclCodecErrorBound defines them).
size_t outsideBound(cocclCodec_t codec, const std::vector<double>& want,
                    const std::vector<double>& got);

// FNV-1a hash of bytes.
uint64_t hashBytes(const void* p, size_t n);

// True if every rank passed the same hash (exact AllGather of the hashes through `comm`).
bool sameOnAllRanks(const Rank& r, uint64_t hash);

// A codec handle owned by the test (cocclCodecCreate / cocclCodecDestroy; a failed create is
// a gtest failure naming the spec), with the codec's facts through the public API.
struct CodecHandle {
  cocclCodec_t c = nullptr;
  explicit CodecHandle(const char* spec);
  ~CodecHandle();
  CodecHandle(const CodecHandle&) = delete;
  CodecHandle& operator=(const CodecHandle&) = delete;
  size_t block() const;                                               // cocclCodecBlockElems
  size_t encoded(size_t n, cocclDataType_t dt = cocclFloat32) const;  // cocclCodecEncodedBytes
  double bound(double rms, double absmax) const;                      // cocclCodecErrorBound
};

}  // namespace coccl::test
