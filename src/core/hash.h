// FNV-1a, 64 bits (Fowler, Noll, Vo): the hash of coccl's agreement messages (codec specs, call
// descriptors, resolved policies). Not cryptographic; ranks compare hashes of their own inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace coccl {

inline uint64_t fnv1a64(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

inline uint64_t fnv1a64(const std::string& s) { return fnv1a64(s.data(), s.size()); }

}  // namespace coccl
