#include "fault_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace coccl::test {

int64_t monoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

Child forkChild(const std::string& outPath, const std::function<void()>& body) {
  std::fflush(stdout);
  std::fflush(stderr);
  Child c;
  c.outPath = outPath;
  c.pid = fork();
  if (c.pid == 0) {
    int fd = open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) _exit(90);
    if (dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(91);
    close(fd);
    setvbuf(stdout, nullptr, _IOLBF, 0);
    body();
    _exit(92);  // body must _exit itself
  }
  return c;
}

void waitChildren(std::vector<Child>& kids, int64_t limitMs, std::vector<int>* hung) {
  const int64_t deadline = monoNs() + limitMs * 1000000;
  size_t left = kids.size();
  while (left > 0) {
    for (auto& k : kids) {
      if (k.endNs) continue;
      int st = 0;
      if (waitpid(k.pid, &st, WNOHANG) == k.pid) {
        k.status = st;
        k.endNs = monoNs();
        --left;
      }
    }
    if (left == 0) break;
    if (monoNs() > deadline) {
      for (size_t i = 0; i < kids.size(); ++i) {
        if (kids[i].endNs) continue;
        if (hung) hung->push_back(static_cast<int>(i));
        kill(kids[i].pid, SIGKILL);
        waitpid(kids[i].pid, &kids[i].status, 0);
        kids[i].endNs = monoNs();
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void becomeSubreaper() { (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

std::vector<pid_t> leftoverDescendants() {
  std::vector<pid_t> left;
  // Give an orphan a moment to be reparented to us.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (;;) {
    int st = 0;
    pid_t w = waitpid(-1, &st, WNOHANG);
    if (w > 0) {
      left.push_back(w);  // it was ours and still unreaped: a descendant we did not know of
      continue;
    }
    break;
  }
  // Live ones: /proc/<pid>/stat with our pid as parent.
  const pid_t self = getpid();
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
      if (pid <= 0) continue;
      std::ifstream f(std::string("/proc/") + e->d_name + "/stat");
      std::string line;
      if (!std::getline(f, line)) continue;
      const size_t rp = line.rfind(')');
      if (rp == std::string::npos) continue;
      std::istringstream rest(line.substr(rp + 2));
      char state;
      long ppid = 0;
      rest >> state >> ppid;
      // Threads of the test itself are not in /proc's top level; only processes are.
      if (ppid == self && pid != self) {
        // ctest or gtest do not fork helpers under us; anything here is a rank's leftover.
        left.push_back(pid);
      }
    }
    closedir(d);
  }
  return left;
}

std::set<std::string> devShmEntries() {
  std::set<std::string> s;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') s.insert(e->d_name);
    closedir(d);
  }
  return s;
}

namespace {
// Whether any process has /dev/shm/<name> open (an fd) or mapped.
bool inUse(const std::string& name) {
  const std::string full = "/dev/shm/" + name;
  bool used = false;
  DIR* d = opendir("/proc");
  if (!d) return true;  // cannot tell: do not accuse
  while (!used) {
    dirent* e = readdir(d);
    if (!e) break;
    if (std::atoi(e->d_name) <= 0) continue;
    const std::string base = std::string("/proc/") + e->d_name;
    if (DIR* fd = opendir((base + "/fd").c_str())) {
      while (dirent* f = readdir(fd)) {
        char target[512];
        const std::string link = base + "/fd/" + f->d_name;
        ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
        if (n <= 0) continue;
        target[n] = '\0';
        if (full == target) {
          used = true;
          break;
        }
      }
      closedir(fd);
    }
    if (used) break;
    std::ifstream maps(base + "/maps");
    std::string line;
    while (std::getline(maps, line))
      if (line.find(full) != std::string::npos) {
        used = true;
        break;
      }
  }
  closedir(d);
  return used;
}
}  // namespace

std::vector<std::string> leakedDevShm(const std::set<std::string>& before, int settleMs) {
  std::vector<std::string> fresh;
  for (const auto& n : devShmEntries())
    if (!before.count(n)) fresh.push_back(n);
  if (fresh.empty()) return fresh;
  std::this_thread::sleep_for(std::chrono::milliseconds(settleMs));
  const std::set<std::string> now = devShmEntries();
  std::vector<std::string> leaked;
  for (const auto& n : fresh)
    if (now.count(n) && !inUse(n)) leaked.push_back(n);
  return leaked;
}

std::vector<std::string> leakedSysvShm(const std::vector<pid_t>& creators) {
  std::vector<std::string> leaked;
  std::ifstream f("/proc/sysvipc/shm");
  std::string line;
  std::getline(f, line);  // header
  while (std::getline(f, line)) {
    std::istringstream in(line);
    long long key, shmid, perms, size, cpid;
    if (!(in >> key >> shmid >> perms >> size >> cpid)) continue;
    if (std::find(creators.begin(), creators.end(), static_cast<pid_t>(cpid)) != creators.end())
      leaked.push_back(line);
  }
  return leaked;
}

std::vector<std::string> readLines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) lines.push_back(line);
  return lines;
}

}  // namespace coccl::test
