// PayloadGeometry: the one description of a codec payload's shape, used by every size and
// offset computation (host codecs, host block loops, device tile loads / stores, the device
// planner, the NCCL path, statistics). A POD with constexpr helpers, usable on host and device.
//
// A blocked payload of n elements has nb = blocks(n) = ceil(n / block) blocks:
//   bytes [0, codeBytes(nb))                  the codes, block-major (block b's codes at
//                                             codesAt(b)); a partial last block keeps all of
//                                             its `block` codes (its input zero-padded)
//   bytes [metaOffset(nb), payloadBytes(n))   nb metadata records of metaBytes each (block b's
//                                             at metaAt(nb, b)), right after the codes
// The metadata area needs no padding: a valid geometry has blockCodeBytes() and metaBytes
// multiples of `align`, so every record is `align`-aligned when the payload is.
// Today's codecs: int8 and fp8_ash_ds are codeBits 8, metaBytes 4 (one fp32 scale word),
// align 4; None is raw(elemBytes): one "block" of one element, no metadata.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace coccl {

struct PayloadGeometry {
  int32_t codeBits = 8;   // bits of one element's code (a block's codes are packed)
  int32_t metaBytes = 4;  // metadata bytes of one block (stored after all codes)
  int32_t block = 1;      // elements per block
  int32_t align = 4;      // alignment of the metadata records (a power of two)

  // A blocked codec's geometry.
  static COCCL_HD_CONSTEXPR PayloadGeometry blocked(int32_t codeBits, int32_t metaBytes,
                                                    int32_t block, int32_t align) {
    PayloadGeometry g;
    g.codeBits = codeBits;
    g.metaBytes = metaBytes;
    g.block = block;
    g.align = align;
    return g;
  }
  // The raw elements of an elemBytes-byte type (the None codec).
  static COCCL_HD_CONSTEXPR PayloadGeometry raw(int32_t elemBytes) {
    return blocked(8 * elemBytes, 0, 1, 1);
  }

  // Whether the layout above holds: whole bytes of codes a block, aligned metadata records.
  COCCL_HD_CONSTEXPR bool valid() const {
    return codeBits > 0 && metaBytes >= 0 && block > 0 && align > 0 && (align & (align - 1)) == 0 &&
           (static_cast<int64_t>(block) * codeBits) % 8 == 0 && blockCodeBytes() % align == 0 &&
           metaBytes % align == 0;
  }

  COCCL_HD_CONSTEXPR uint64_t blockCodeBytes() const {
    return static_cast<uint64_t>(block) * static_cast<uint64_t>(codeBits) / 8u;
  }
  // Payload bytes one block adds (its codes and its metadata).
  COCCL_HD_CONSTEXPR uint64_t blockBytes() const {
    return blockCodeBytes() + static_cast<uint64_t>(metaBytes);
  }
  COCCL_HD_CONSTEXPR uint64_t blocks(uint64_t n) const {
    return (n + static_cast<uint64_t>(block) - 1) / static_cast<uint64_t>(block);
  }
  // Offset of block b's codes.
  COCCL_HD_CONSTEXPR uint64_t codesAt(uint64_t b) const { return b * blockCodeBytes(); }
  // Bytes of the codes of nb blocks = offset of the metadata area.
  COCCL_HD_CONSTEXPR uint64_t codeBytes(uint64_t nb) const { return nb * blockCodeBytes(); }
  COCCL_HD_CONSTEXPR uint64_t metaOffset(uint64_t nb) const { return codeBytes(nb); }
  // Offset of block b's metadata in a payload of nb blocks.
  COCCL_HD_CONSTEXPR uint64_t metaAt(uint64_t nb, uint64_t b) const {
    return metaOffset(nb) + b * static_cast<uint64_t>(metaBytes);
  }
  // Exact payload bytes of n elements (a partial last block counts whole).
  COCCL_HD_CONSTEXPR uint64_t payloadBytes(uint64_t n) const { return blocks(n) * blockBytes(); }
  // The largest whole-block element count whose payload fits in `bytes` (0 if none does).
  COCCL_HD_CONSTEXPR uint64_t elemsFitting(uint64_t bytes) const {
    return bytes / blockBytes() * static_cast<uint64_t>(block);
  }

  COCCL_HD_CONSTEXPR bool operator==(const PayloadGeometry& o) const {
    return codeBits == o.codeBits && metaBytes == o.metaBytes && block == o.block &&
           align == o.align;
  }
  COCCL_HD_CONSTEXPR bool operator!=(const PayloadGeometry& o) const { return !(*this == o); }
};

static_assert(PayloadGeometry::blocked(8, 4, 128, 4).payloadBytes(1000) == 8 * (128 + 4),
              "one byte per code, one fp32 per block, partial last block whole");
static_assert(PayloadGeometry::blocked(8, 4, 32, 4).elemsFitting(1000) == 27 * 32, "");
static_assert(PayloadGeometry::blocked(4, 4, 32, 4).payloadBytes(33) == 2 * (16 + 4), "");
static_assert(PayloadGeometry::raw(2).payloadBytes(7) == 14, "");

}  // namespace coccl
