#include "coll_util.h"

#include "core/dtype.h"
#include "kernels/float_convert.h"
#include "kernels/fp8.h"

namespace coccl::test {

size_t elemSize(cocclDataType_t dt) { return dtypeSize(dt); }

const char* typeName(cocclDataType_t dt) { return dtypeName(dt); }

bool isFloat(cocclDataType_t dt) { return isFloatingType(dt); }

const char* opName(cocclRedOp_t op) {
  static const char* n[] = {"sum", "prod", "max", "min", "avg"};
  return n[op];
}

double getElem(cocclDataType_t dt, const void* buf, size_t i) {
  switch (dt) {
    case cocclInt8: return static_cast<const int8_t*>(buf)[i];
    case cocclUint8: return static_cast<const uint8_t*>(buf)[i];
    case cocclInt32: return static_cast<const int32_t*>(buf)[i];
    case cocclUint32: return static_cast<const uint32_t*>(buf)[i];
    case cocclInt64: return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case cocclUint64: return static_cast<double>(static_cast<const uint64_t*>(buf)[i]);
    case cocclFloat16: return kmath::fp16ToFloat(static_cast<const uint16_t*>(buf)[i]);
    case cocclFloat32: return static_cast<const float*>(buf)[i];
    case cocclFloat64: return static_cast<const double*>(buf)[i];
    case cocclBfloat16: return kmath::bf16ToFloat(static_cast<const uint16_t*>(buf)[i]);
    case cocclFloat8e4m3:
      return kmath::fp8ToFloat<kmath::Fp8E4M3>(static_cast<const uint8_t*>(buf)[i]);
    case cocclFloat8e5m2:
      return kmath::fp8ToFloat<kmath::Fp8E5M2>(static_cast<const uint8_t*>(buf)[i]);
    default: return NAN;
  }
}

void setElem(cocclDataType_t dt, void* buf, size_t i, double v) {
  switch (dt) {
    case cocclInt8: static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(v); break;
    case cocclUint8: static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(v); break;
    case cocclInt32: static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v); break;
    case cocclUint32: static_cast<uint32_t*>(buf)[i] = static_cast<uint32_t>(v); break;
    case cocclInt64: static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v); break;
    case cocclUint64: static_cast<uint64_t*>(buf)[i] = static_cast<uint64_t>(v); break;
    case cocclFloat16:
      static_cast<uint16_t*>(buf)[i] = kmath::floatToFp16(static_cast<float>(v));
      break;
    case cocclFloat32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case cocclFloat64: static_cast<double*>(buf)[i] = v; break;
    case cocclBfloat16:
      static_cast<uint16_t*>(buf)[i] = kmath::floatToBf16(static_cast<float>(v));
      break;
    case cocclFloat8e4m3:
      static_cast<uint8_t*>(buf)[i] = kmath::floatToFp8Sat<kmath::Fp8E4M3>(static_cast<float>(v));
      break;
    case cocclFloat8e5m2:
      static_cast<uint8_t*>(buf)[i] = kmath::floatToFp8Sat<kmath::Fp8E5M2>(static_cast<float>(v));
      break;
    default: break;
  }
}

void fillExact(cocclDataType_t dt, cocclRedOp_t op, void* buf, size_t count, int rank, int salt) {
  const bool unsignedType = dt == cocclUint8 || dt == cocclUint32 || dt == cocclUint64;
  const int range = dt == cocclFloat8e5m2 ? 1 : 2;  // fp8 sums stay exact for <= 8 ranks
  for (size_t i = 0; i < count; ++i) {
    uint64_t h = (i * 2654435761u) ^ (static_cast<uint64_t>(rank + 1) * 40503u) ^
                 (static_cast<uint64_t>(salt) * 97u);
    h ^= h >> 13;
    double v;
    if (op == cocclProd) {
      static const double kVals[] = {1, -1, 2, 1, -1, 1, 2, -2};
      v = kVals[h % 8];
      if (!isFloat(dt) && elemSize(dt) == 1) v = v > 0 ? 1 : -1;  // stay clear of 8-bit wrap
      if (unsignedType) v = std::fabs(v);
    } else if (op == cocclMax || op == cocclMin) {
      v = static_cast<double>(h % 50) - (unsignedType ? 0 : 25);
      if (dt == cocclFloat8e4m3 || dt == cocclFloat8e5m2) v = static_cast<double>(h % 9) - 4;
    } else {
      v = static_cast<double>(static_cast<int>(h % (2 * range + 1)) - range);
      if (unsignedType) v = static_cast<double>(h % 3);
      if (!isFloat(dt) && dt != cocclInt8 && dt != cocclUint8) v = static_cast<double>(h % 1000) - (unsignedType ? 0 : 500);
    }
    setElem(dt, buf, i, v);
  }
}

double expectedReduce(cocclDataType_t dt, cocclRedOp_t op, const std::vector<const void*>& ins,
                      size_t i) {
  const int n = static_cast<int>(ins.size());
  double acc = getElem(dt, ins[0], i);
  for (int r = 1; r < n; ++r) {
    double v = getElem(dt, ins[r], i);
    switch (op) {
      case cocclSum: case cocclAvg: acc += v; break;
      case cocclProd: acc *= v; break;
      case cocclMax: acc = v > acc ? v : acc; break;
      case cocclMin: acc = v < acc ? v : acc; break;
      default: break;
    }
  }
  if (op == cocclAvg) {
    if (isFloat(dt) && dt != cocclFloat64)
      acc = static_cast<float>(acc) / static_cast<float>(n);
    else if (isFloat(dt))
      acc = acc / n;
    else
      acc = std::trunc(acc / n);
  }
  // Round to the data type (inputs are chosen so that integer results never wrap).
  std::vector<uint8_t> tmp(8);
  setElem(dt, tmp.data(), 0, acc);
  return getElem(dt, tmp.data(), 0);
}

Guarded::Guarded(size_t bytes, uint8_t fill) : bytes_(bytes), buf_(bytes + 2 * kGuard, fill) {
  std::memset(buf_.data(), kGuardByte, kGuard);
  std::memset(buf_.data() + kGuard + bytes, kGuardByte, kGuard);
}

bool Guarded::guardsIntact() const {
  for (size_t i = 0; i < kGuard; ++i)
    if (buf_[i] != kGuardByte || buf_[kGuard + bytes_ + i] != kGuardByte) return false;
  return true;
}

}  // namespace coccl::test
