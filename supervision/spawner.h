#pragma once
// Spawner: the seam between deciding what to run (Command, RankSpec) and the OS starting it
// (docs/style.md §11, §12). PosixSpawner forks and execs; FakeSpawner records calls for tests. Reaping
// (waitpid) is left to the caller's event loop, so the same spawner serves a poll() loop in
// runLocalJob and an Asio loop in the agent.

#include <sys/types.h>

#include <vector>

#include "common/command.h"
#include "common/unique_fd.h"

namespace dsrun {

/// Where a child's stdout and stderr go.
enum class OutputMode {
  Pipe,     ///< one pipe per stream; the read ends come back in Subprocess
  File,     ///< both streams are dup2'd onto SpawnOptions::outputFd (each-rank log file)
  Inherit,  ///< the child shares the caller's stdout and stderr
};

/// How to start one process, beyond its Command.
struct SpawnOptions {
  OutputMode output = OutputMode::Pipe;  ///< see OutputMode
  int outputFd = -1;                     ///< OutputMode::File: the caller's fd (not taken over)
  std::vector<int> cores;                ///< CPU ids for sched_setaffinity before exec; empty = inherit
  bool dieWithParent = true;             ///< PR_SET_PDEATHSIG(SIGKILL) in the child
  bool stdinNull = false;                ///< /dev/null as stdin instead of the caller's stdin
  /// setpgid(0, 0): the child leads its own process group. false: it stays in the caller's group, for a
  /// caller whose signals already reach every process it started (a Slurm task: slurmstepd signals them all).
  bool ownProcessGroup = true;
};

/// A started child. It leads its own process group (pgid == pid) unless SpawnOptions::ownProcessGroup is
/// false. The caller owns the fds and must reap the pid with waitpid().
struct Subprocess {
  pid_t pid = -1;    ///< process id, also its process group id
  UniqueFd stdoutFd;  ///< read end of the stdout pipe (OutputMode::Pipe only), non-blocking, CLOEXEC
  UniqueFd stderrFd;  ///< read end of the stderr pipe (OutputMode::Pipe only), non-blocking, CLOEXEC
};

class Spawner {
 public:
  virtual ~Spawner() = default;
  /// Starts `command` and returns once it has exec'd. Throws IoError naming argv[0] and errno if it
  /// could not (e.g. "spawn 'python3': No such file or directory"); nothing is left running then.
  /// PosixSpawner: call from a thread that outlives the child (PDEATHSIG follows the forking thread).
  virtual Subprocess spawn(const Command& command, const SpawnOptions& options) = 0;
  /// Sends `signal` to the whole process group `pgid`; a group that is already gone is not an error.
  virtual void signalGroup(pid_t pgid, int signal) = 0;
};

}  // namespace dsrun
