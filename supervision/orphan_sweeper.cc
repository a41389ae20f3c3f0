#include "supervision/orphan_sweeper.h"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "common/logging.h"
#include "supervision/process_state.h"

namespace dsrun {

std::set<pid_t> scanAllProcesses() {
  std::set<pid_t> children;
  pid_t self = ::getpid();
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return children;
  while (dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    std::ifstream in(std::string("/proc/") + entry->d_name + "/stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so parse after the last ')'.
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    long ppid = 0;
    if (rest >> state >> ppid && ppid == self) children.insert(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return children;
}

std::set<pid_t> listChildren() {
  // Fast path: /proc/self/task/<tid>/children (CONFIG_PROC_CHILDREN), one small file per thread.
  std::set<pid_t> children;
  DIR* tasks = ::opendir("/proc/self/task");
  if (tasks == nullptr) return scanAllProcesses();
  bool readable = true;
  while (dirent* entry = ::readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream in(std::string("/proc/self/task/") + entry->d_name + "/children");
    if (!in) {
      readable = false;
      break;
    }
    long pid = 0;
    while (in >> pid) children.insert(static_cast<pid_t>(pid));
  }
  ::closedir(tasks);
  return readable ? children : scanAllProcesses();
}

namespace {

/// Reaps `pid` once it dies, polling for at most waitS: a process in state D outlives SIGKILL.
bool reapWithin(pid_t pid, double waitS) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(waitS);
  for (;;) {
    int status = 0;
    const pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid || (got < 0 && errno != EINTR)) return true;  // reaped, or not ours to wait for
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

OrphanSweeper::OrphanSweeper() : before_(listChildren()) {
  ::prctl(PR_GET_CHILD_SUBREAPER, &previousSubreaper_);
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    DSRUN_LOG(WARN) << "prctl(PR_SET_CHILD_SUBREAPER): " << std::strerror(errno)
                    << " (processes that leave a rank's process group may outlive the job)";
  }
}

OrphanSweeper::~OrphanSweeper() { ::prctl(PR_SET_CHILD_SUBREAPER, previousSubreaper_); }

int OrphanSweeper::sweep(double waitS) {
  int killed = 0;
  std::set<pid_t> givenUp = left_;  // alive waitS after SIGKILL (state D): never waited for again
  // Each round kills the current strays; their children are re-parented here for the next round.
  for (int round = 0; round < 1000; ++round) {
    std::set<pid_t> strays;
    for (pid_t pid : listChildren()) {
      if (before_.count(pid) == 0 && givenUp.count(pid) == 0) strays.insert(pid);
    }
    if (strays.empty()) break;
    for (pid_t pid : strays) {
      ::kill(pid, SIGKILL);
      if (reapWithin(pid, waitS)) {
        ++killed;
      } else {
        givenUp.insert(pid);
        DSRUN_LOG(WARN) << "pid " << pid << " left by the ranks is still alive " << waitS << "s after SIGKILL, in state "
                        << processState(pid) << "; giving up on it";
      }
    }
  }
  if (killed > 0) {
    DSRUN_LOG(INFO) << "killed " << killed << " stray processes left by the ranks";
  }
  return killed;
}

}  // namespace dsrun
