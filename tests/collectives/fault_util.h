// Helpers of the fault-injection test (test_fault_injection.cc): forked ranks with their
// output captured in files, a monotonic clock every process shares, and the leak checks
// (shared-memory segments, left-over descendant processes).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace coccl::test {

// CLOCK_MONOTONIC in nanoseconds: one clock for every process of the machine.
int64_t monoNs();

// A forked process whose stdout and stderr go to `outPath`.
struct Child {
  pid_t pid = -1;
  std::string outPath;
  int status = -1;         // waitpid status once it ended
  int64_t endNs = 0;       // when the parent saw it end (monoNs)
};

// Forks one child running body() (which must end with _exit) with stdout/stderr redirected to
// outPath. Call it before this process creates any thread.
Child forkChild(const std::string& outPath, const std::function<void()>& body);

// Waits for every child, polling; those still running after `limitMs` are killed (SIGKILL) and
// reported as hung in *hung (their ranks). Fills status and endNs.
void waitChildren(std::vector<Child>& kids, int64_t limitMs, std::vector<int>* hung);

// Makes this process the reaper of its orphaned descendants (PR_SET_CHILD_SUBREAPER), so that
// a grandchild left behind by a rank shows up in leftoverDescendants().
void becomeSubreaper();
// Pids of descendants still alive (or unreaped) after every child was waited for; reaps the
// dead ones.
std::vector<pid_t> leftoverDescendants();

// Names in /dev/shm now.
std::set<std::string> devShmEntries();
// Entries of /dev/shm that are not in `before`, still there after `settleMs`, and that no
// process has open or mapped: what a dead process left behind. (Scoped by time and by "nobody
// uses it", since /dev/shm names carry no creator; another program's leak in the same window
// would be counted too.)
std::vector<std::string> leakedDevShm(const std::set<std::string>& before, int settleMs);
// System V segments created by one of `creators` that still exist (/proc/sysvipc/shm): a
// segment is gone once it was marked for removal and its last user detached or died.
std::vector<std::string> leakedSysvShm(const std::vector<pid_t>& creators);

// The lines of a text file (empty if it cannot be read).
std::vector<std::string> readLines(const std::string& path);

}  // namespace coccl::test
