// Monotonic deadlines for every wait (COCCL_TIMEOUT_MS).
#pragma once

#include <chrono>
#include <cstdint>

namespace coccl {

using Clock = std::chrono::steady_clock;

class Deadline {
 public:
  // timeoutMs <= 0 means "never" (only for internal use; user waits always have a timeout).
  explicit Deadline(int64_t timeoutMs)
      : infinite_(timeoutMs <= 0),
        at_(Clock::now() + std::chrono::milliseconds(timeoutMs > 0 ? timeoutMs : 0)) {}
  bool expired() const { return !infinite_ && Clock::now() >= at_; }
  // Milliseconds left, clamped to [0, cap]; cap for infinite deadlines.
  int remainingMs(int cap = 1000) const {
    if (infinite_) return cap;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
    if (left < 0) return 0;
    return left > cap ? cap : static_cast<int>(left);
  }

 private:
  bool infinite_;
  Clock::time_point at_;
};

}  // namespace coccl
