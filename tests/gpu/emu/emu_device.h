// One emulated device of the CPU emulation of the collective kernels (test_device_emulated.cc):
// a pool of OS threads, one per block of the communicator, that runs each launch's blocks as
// cooperative lanes (block_emu.cc, emu/cuda_runtime.h).
#pragma once

#include <cuda_runtime.h>  // emu/cuda_runtime.h

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace coccl_emu {

constexpr int kLanes = 64;  // threads of an emulated block (2 warps)

// One rank's emulated device: its region, context, host state, and a pool of one OS thread per
// block that runs each launch's blocks.
class EmuDevice {
 public:
  EmuDevice(int nb) : nb_(nb) {
    for (int b = 0; b < nb; ++b) workers_.emplace_back([this, b] { work(b); });
  }
  ~EmuDevice() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
      ++gen_;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  // Runs body() as every block of a grid of `blocks` (<= nb) blocks; returns the first
  // emulation error.
  std::string launch(const std::function<void()>& body, int blocks) {
    if (blocks < 1 || blocks > nb_) return "launch of " + std::to_string(blocks) + " blocks";
    std::unique_lock<std::mutex> l(m_);
    body_ = &body;
    active_ = blocks;
    done_ = 0;
    error_.clear();
    ++gen_;
    cv_.notify_all();
    doneCv_.wait(l, [&] { return done_ == nb_; });
    return error_;
  }

 private:
  void work(int b) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void()>* body;
      int active;
      {
        std::unique_lock<std::mutex> l(m_);
        cv_.wait(l, [&] { return gen_ != seen; });
        seen = gen_;
        if (stop_) return;
        body = body_;
        active = active_;
      }
      std::string err;
      bool ok = true;
      if (b < active)
        ok = block_emu::runBlock(static_cast<unsigned>(b), static_cast<unsigned>(active), kLanes,
                                 *body, &err);
      std::lock_guard<std::mutex> l(m_);
      if (!ok && error_.empty()) error_ = err;
      if (++done_ == nb_) doneCv_.notify_all();
    }
  }
  int nb_;
  int active_ = 0;  // blocks of the running launch (set under m_ before the workers wake)
  std::vector<std::thread> workers_;
  std::mutex m_;
  std::condition_variable cv_, doneCv_;
  uint64_t gen_ = 0;
  int done_ = 0;
  bool stop_ = false;
  const std::function<void()>* body_ = nullptr;
  std::string error_;
};

}  // namespace coccl_emu
