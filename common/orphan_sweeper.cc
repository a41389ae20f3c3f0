#include "common/orphan_sweeper.h"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "common/logging.h"

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

OrphanSweeper::OrphanSweeper() : before_(listChildren()) {
  ::prctl(PR_GET_CHILD_SUBREAPER, &previousSubreaper_);
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    DSRUN_LOG(WARN) << "prctl(PR_SET_CHILD_SUBREAPER): " << std::strerror(errno)
                    << " (processes that leave a rank's process group may outlive the job)";
  }
}

OrphanSweeper::~OrphanSweeper() { ::prctl(PR_SET_CHILD_SUBREAPER, previousSubreaper_); }

int OrphanSweeper::sweep() {
  int killed = 0;
  // Each round kills the current strays; their children are re-parented here for the next round.
  for (int round = 0; round < 1000; ++round) {
    std::set<pid_t> strays;
    for (pid_t pid : listChildren()) {
      if (before_.count(pid) == 0) strays.insert(pid);
    }
    if (strays.empty()) break;
    for (pid_t pid : strays) {
      ::kill(pid, SIGKILL);
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      ++killed;
    }
  }
  if (killed > 0) {
    DSRUN_LOG(INFO) << "killed " << killed << " stray processes left by the ranks";
  }
  return killed;
}

}  // namespace dsrun
