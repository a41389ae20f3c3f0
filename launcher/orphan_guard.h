#pragma once
// OrphanGuard: runs a command if dsrun dies without saying goodbye (kill -9, OOM). pdsh dies with dsrun
// (PDEATHSIG), but its ssh sessions and the remote ranks do not: the guard is a forked child, in its own
// process group (a terminal's Ctrl-C does not reach it), blocked reading a pipe whose write end only dsrun
// holds. dsrun's death closes the pipe without the goodbye byte and the guard execs `command` (pdsh's kill
// command: `dsrun-launch --kill --job_id=ID` on every host). disarm() writes the byte: the guard exits.

#include <sys/types.h>

#include "common/command.h"

namespace dsrun::launcher {

class OrphanGuard {
 public:
  /// Forks the guard. Call before spawning anything else, so the guard holds none of their descriptors.
  /// Throws IoError if the pipe or the fork fails.
  explicit OrphanGuard(const Command& command);
  /// disarm()s, then reaps the guard.
  ~OrphanGuard();
  OrphanGuard(const OrphanGuard&) = delete;
  OrphanGuard& operator=(const OrphanGuard&) = delete;

  /// The job ended under dsrun's control: the guard exits without running anything. Idempotent.
  void disarm();
  /// The guard's pid (for waitpid filters).
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;   ///< the guard process
  int writeFd_ = -1; ///< our end of the pipe; closed by disarm()
};

}  // namespace dsrun::launcher
