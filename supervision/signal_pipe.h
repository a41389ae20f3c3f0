#pragma once
// SignalPipe: turns signals into bytes on a pipe that a poll() loop watches (the self-pipe trick),
// for as long as the object lives. One instance per process at a time.

#include <csignal>
#include <vector>

#include "common/unique_fd.h"

namespace dsrun {

class SignalPipe {
 public:
  /// Catches SIGCHLD and each of `forwarded` (e.g. SIGINT, SIGTERM, SIGHUP) except those already
  /// ignored on entry (nohup, `cmd &` in a script: as bash does for traps, they stay ignored), and
  /// ignores SIGPIPE, and unblocks them in the calling thread. Throws IoError if the pipe cannot be
  /// made. Not thread-safe; handlers are process-wide.
  explicit SignalPipe(const std::vector<int>& forwarded);
  /// Restores every disposition it changed and the thread's signal mask.
  ~SignalPipe();
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  /// Readable when a signal arrived (non-blocking).
  int fd() const { return readEnd_.get(); }
  /// Signals received since the last call, in arrival order (SIGCHLD may repeat or coalesce).
  std::vector<int> drain();

 private:
  /// A disposition to put back in the destructor.
  struct Saved {
    int signal;               ///< which signal
    struct sigaction action;  ///< what it was before
  };

  UniqueFd readEnd_;         ///< watched by the loop
  UniqueFd writeEnd_;        ///< written by the handler
  std::vector<Saved> saved_;  ///< dispositions to restore
  sigset_t oldMask_{};        ///< the calling thread's mask before
};

/// Records that this process was asked to stop (SIGINT, SIGTERM or SIGHUP reached one of its catchers:
/// every SignalPipe does it, an Asio signal_set calls it). Async-signal-safe. The first one is kept.
void noteStopSignal(int signal);
/// The first stop signal noted since the process started, or 0: a job that ended because dsrun was told to
/// stop is not restarted (--max_restarts, launcher/restart_loop.h).
int stopSignalNoted();

}  // namespace dsrun
