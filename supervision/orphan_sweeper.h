#pragma once
// OrphanSweeper: makes this process the child subreaper (PR_SET_CHILD_SUBREAPER) while it lives, so
// processes that escape a rank's process group (setsid, double fork) are re-parented here instead of
// to init, and sweep() can kill them once the job is over.

#include <sys/types.h>

#include <set>

namespace dsrun {

class OrphanSweeper {
 public:
  /// Remembers the children that already exist (they are not the job's) and becomes subreaper.
  OrphanSweeper();
  /// Puts the previous subreaper setting back.
  ~OrphanSweeper();
  OrphanSweeper(const OrphanSweeper&) = delete;
  OrphanSweeper& operator=(const OrphanSweeper&) = delete;

  /// SIGKILLs and reaps every child that was not there at construction, again and again as their own
  /// descendants are re-parented here, until none is left. Returns how many it killed. Blocks only
  /// while a SIGKILLed process dies, at most `waitS` for each: one still alive then (state D) is named in a
  /// warning and left. Call from the thread that reaps.
  int sweep(double waitS = 5);
  /// A child sweep() must not wait for (a rank already given up after SIGKILL).
  void leave(pid_t pid) { left_.insert(pid); }

 private:
  std::set<pid_t> before_;      ///< children present at construction
  std::set<pid_t> left_;        ///< see leave()
  int previousSubreaper_ = 0;   ///< PR_GET_CHILD_SUBREAPER at construction
};

/// The current children of this process, from /proc/self/task/*/children (microseconds), or from
/// scanAllProcesses() where the kernel lacks CONFIG_PROC_CHILDREN.
std::set<pid_t> listChildren();

/// The same by reading every /proc/<pid>/stat (milliseconds with a few hundred processes).
std::set<pid_t> scanAllProcesses();

}  // namespace dsrun
