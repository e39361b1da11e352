// Helpers for the core tests: ranks as threads, error codes of a call, elapsed time.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/bootstrap.h"
#include "core/env.h"
#include "core/error.h"

namespace coccl {
namespace test {

// Result code of f() (cocclSuccess if it returns); *msg receives the error text.
inline cocclResult_t codeOf(const std::function<void()>& f, std::string* msg = nullptr) {
  try {
    f();
    return cocclSuccess;
  } catch (const Error& e) {
    if (msg) *msg = e.what();
    return e.code();
  }
}

inline double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Runs fn(bootstrap) on nranks threads joined to one fresh root; failures are reported as
// gtest failures naming the rank.
inline void runRanks(int nranks, const std::function<void(Bootstrap&)>& fn,
                     int64_t timeoutMs = 10000) {
  BootstrapHandle h;
  bootstrapCreateRoot(&h);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        Bootstrap b(h, r, nranks, timeoutMs);
        fn(b);
      } catch (const Error& e) {
        ADD_FAILURE() << "rank " << r << ": " << e.what() << " (code " << e.code() << ")";
      }
    });
  }
  for (auto& t : threads) t.join();
}

// Sets an environment variable for the lifetime of the object and re-reads env().
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
    reloadEnvForTesting();
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_.c_str(), old_.c_str(), 1);
    else
      unsetenv(name_.c_str());
    reloadEnvForTesting();
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

}  // namespace test
}  // namespace coccl
