// int4 codec: the instance (parsed spec) and the payload geometry, shared by the host and
// device implementations.
//
// Payload of `count` elements, block G, nb = ceil(count / G) blocks (any input dtype):
//   bytes [0, nb * G / 2)            4-bit codes, block-major, element order within a block;
//                                    element j of block b is in byte b * G / 2 + j / 2, the LOW
//                                    nibble for even j, the HIGH nibble for odd j (two's
//                                    complement, -8..7; 7 / -7 / -8 are special in RAW blocks);
//                                    a partial last block is zero-padded to G elements and all
//                                    G / 2 bytes of it are written;
//   bytes [nb * G / 2, nb * (G / 2 + 4))  nb scale words, little-endian uint32 (fp32 bits),
//                                    word b for block b; 4-byte aligned (G / 2 >= 16).
//   encodedBytes(count) = ceil(count / G) * (G / 2 + 4), the same for fp32, fp16 and bf16
//   (bf16 at G = 128: 16 / 4.25 = 3.76x smaller than the input; fp32: 7.53x).
#pragma once

#include <stddef.h>
#include <stdint.h>

// Functions here have internal linkage in host code (static): the host operations are built
// once per instruction set (int4_host_ops.h), and an inline function with external linkage
// would be shared between those builds by the linker.
#ifdef __CUDACC__
#define INT4_PHD __host__ __device__ inline
#else
#define INT4_PHD static inline
#endif

namespace int4c {

struct Params {
  int block = 128;       // G
  int mode = 2;          // kModePlain / kModeRotated / kModeAuto (int4_math.h)
  bool stochastic = false;
  uint64_t seed = 0;
};

INT4_PHD int subBlock(const Params& p) { return p.block < 128 ? p.block : 128; }  // S

struct HostOps;  // int4_host_ops.h

// The plug-in's instance: the parsed spec (read by the host and device operations) and the host
// build of the operations chosen at create() (int4_host_ops.h).
struct Instance {
  Params p;
  const HostOps* host = nullptr;
};

INT4_PHD size_t numBlocks(const Params& p, size_t count) {
  return (count + static_cast<size_t>(p.block) - 1) / static_cast<size_t>(p.block);
}
INT4_PHD size_t codeBytes(const Params& p, size_t count) {
  return numBlocks(p, count) * static_cast<size_t>(p.block / 2);
}
INT4_PHD size_t payloadBytes(const Params& p, size_t count) {
  return numBlocks(p, count) * static_cast<size_t>(p.block / 2 + 4);
}

}  // namespace int4c
