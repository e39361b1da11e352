// Per-communicator pool of staging buffers for encoded chunks and receive staging. Buffers are
// kept (not freed) between calls, so steady-state collectives allocate nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace coccl {

class BufferPool;

// A buffer on loan from the pool; returns itself on destruction.
class PoolBuffer {
 public:
  PoolBuffer() = default;
  PoolBuffer(BufferPool* pool, size_t cls, void* p) : pool_(pool), cls_(cls), p_(p) {}
  ~PoolBuffer() { release(); }
  PoolBuffer(PoolBuffer&& o) noexcept : pool_(o.pool_), cls_(o.cls_), p_(o.p_) { o.p_ = nullptr; }
  PoolBuffer& operator=(PoolBuffer&& o) noexcept;
  PoolBuffer(const PoolBuffer&) = delete;
  PoolBuffer& operator=(const PoolBuffer&) = delete;

  void* data() const { return p_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  void release();

 private:
  BufferPool* pool_ = nullptr;
  size_t cls_ = 0;
  void* p_ = nullptr;
};

class BufferPool {
 public:
  BufferPool() = default;
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of at least `bytes` bytes (64-byte aligned; rounded up to a power of two).
  PoolBuffer get(size_t bytes);
  size_t bytesHeld() const;  // total bytes owned by the pool (in use or free)

 private:
  friend class PoolBuffer;
  void put(size_t cls, void* p);
  mutable std::mutex mu_;
  std::vector<std::vector<void*>> free_;  // by size class (log2 bytes)
  size_t held_ = 0;
};

}  // namespace coccl
