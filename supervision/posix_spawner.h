#pragma once
// PosixSpawner: fork/exec with a CLOEXEC status pipe, so a failure in the child (exec, chdir,
// affinity) comes back from spawn() at once with its errno instead of as a mysterious exit 127.

#include "supervision/spawner.h"

namespace dsrun {

/// In the child, before exec: own process group (setpgid), PR_SET_PDEATHSIG(SIGKILL) plus a
/// getppid() re-check, stdout/stderr redirection, every other fd closed, cwd, sched_setaffinity,
/// handled signals (and SIGPIPE/SIGXFSZ, as Python's subprocess does) back to SIG_DFL and an empty
/// signal mask. argv[0] without '/' is searched in the PATH of the Command's env (else /bin:/usr/bin).
/// Thread-compatible: the child calls only async-signal-safe functions between fork and exec.
class PosixSpawner : public Spawner {
 public:
  Subprocess spawn(const Command& command, const SpawnOptions& options) override;
  void signalGroup(pid_t pgid, int signal) override;
};

}  // namespace dsrun
