#include "collectives/host/buffer_pool.h"

#include <cstdlib>

#include "core/error.h"
#include "core/log.h"

namespace coccl {

PoolBuffer& PoolBuffer::operator=(PoolBuffer&& o) noexcept {
  if (this != &o) {
    release();
    pool_ = o.pool_;
    cls_ = o.cls_;
    p_ = o.p_;
    o.p_ = nullptr;
  }
  return *this;
}

void PoolBuffer::release() {
  if (p_ && pool_) pool_->put(cls_, p_);
  p_ = nullptr;
}

BufferPool::~BufferPool() {
  for (auto& v : free_)
    for (void* p : v) std::free(p);
}

PoolBuffer BufferPool::get(size_t bytes) {
  size_t cls = 6;  // 64 bytes minimum
  while ((size_t{1} << cls) < bytes) ++cls;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.size() <= cls) free_.resize(cls + 1);
    if (!free_[cls].empty()) {
      void* p = free_[cls].back();
      free_[cls].pop_back();
      return PoolBuffer(this, cls, p);
    }
  }
  void* p = std::aligned_alloc(64, size_t{1} << cls);
  if (!p) COCCL_THROW(cocclSystemError, "out of host memory allocating %zu bytes", size_t{1} << cls);
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_ += size_t{1} << cls;
  }
  COCCL_TRACE(kLogAlloc, "pool grew by %zu bytes", size_t{1} << cls);
  return PoolBuffer(this, cls, p);
}

void BufferPool::put(size_t cls, void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  free_[cls].push_back(p);
}

size_t BufferPool::bytesHeld() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

}  // namespace coccl
