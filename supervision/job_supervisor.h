#pragma once
// JobSupervisor: a local job, apart from the event loop that feeds it (docs/style.md §3, §10). It
// starts ranks through a Spawner, is told about exits, signals and the time, passes them to the
// JobController that decides for every backend, and carries out its decisions by signalling process
// groups through the same Spawner; it words the notices. Time is a number of seconds passed in, so
// tests drive it with a FakeSpawner and a made-up clock; runLocalJob drives it from poll().

#include <sys/types.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/job_controller.h"
#include "common/stop_times.h"
#include "supervision/rank_spec.h"
#include "supervision/spawner.h"

namespace dsrun {

struct SupervisorOptions {
  /// killGrace: delay between the first signal to a rank and SIGKILL; exitTimeout: after the first clean exit,
  /// how long the others may run (nullopt: unlimited)
  StopTimes stop;
  bool announceCleanExit = false;  ///< a notice for each clean exit when there is an exit timeout (dsrun-launch)
  /// For a failing rank killed by SIGKILL: how an OOM kill of it is known (OomLog::oomKilled), or nullopt.
  std::function<std::optional<std::string>(pid_t)> oomKilled = nullptr;
  /// After SIGKILL, how long a rank may take to die before it is given up and named with its state (D).
  double killWaitS = 10;
  /// How a given-up rank's state is read (processState, /proc); replaceable for tests.
  std::function<std::string(pid_t)> stateOf = nullptr;
};

/// Not thread-safe: call it from one thread (the one that spawns, for PDEATHSIG's sake). `ranks`
/// and `spawner` must outlive it. Rules (JobController's, with its local options):
/// - a rank exiting non-zero or by a signal: SIGTERM to every other running rank's group, SIGKILL
///   stop.killGrace later; the job's code is that rank's (128+signal for a signal);
/// - SIGINT/SIGTERM/SIGHUP: forwarded once to every running rank's group, SIGKILL stop.killGrace later; a
///   second signal sends SIGKILL at once; code: the first failing rank's, else 128+signal;
/// - a rank still alive killWaitS after SIGKILL (uninterruptible sleep) is named with its state and given up;
/// - a rank's exit: SIGKILL to the rest of its process group (no orphans);
/// - stop.exitTimeout after the first clean exit: the ranks still running are stopped as above.
class JobSupervisor {
 public:
  JobSupervisor(const std::vector<RankSpec>& ranks, SupervisorOptions options, Spawner& spawner);

  /// Spawns ranks[index] (call in index order, while !stopping()). On IoError the error is kept
  /// (spawnError()), the ranks already started are stopped, and nullopt is returned.
  std::optional<Subprocess> start(size_t index, const SpawnOptions& options, double now);
  /// A reaped child; pids that are not a rank's (re-parented orphans) are ignored.
  void onExit(pid_t pid, int waitStatus, double now);
  /// A signal dsrun received: SIGINT, SIGTERM or SIGHUP stop the job as above; any other (SIGUSR1,
  /// SIGUSR2) is forwarded to every running rank's group once per call and changes nothing else.
  void onSignal(int signal, double now);
  /// A hang was detected (`what` names the ranks and where their stacks are; `host` is the first's): a failure
  /// with code 1, which stops the job as a failing rank does.
  void onHang(const std::string& what, const std::string& host, double now);
  /// Acts on deadlines that have passed (exit timeout, kill grace).
  void onTime(double now);
  /// Emergency stop (the caller is failing): SIGKILL to every running rank's group, no notice.
  void abort();

  /// When onTime() must be called next; nullopt when no deadline is pending.
  std::optional<double> nextDeadline() const;
  /// True once the job is being stopped (failure, signal, exit timeout or spawn failure).
  bool stopping() const { return controller_.stopping(); }
  /// True when no rank is running and no more will be started.
  bool done() const { return controller_.done(); }
  size_t runningCount() const { return controller_.runningCount(); }
  /// The job's exit code (see the rules above); meaningful once done().
  int exitCode() const { return controller_.exitCode(); }
  /// The rank whose failure stopped the job: its index in `ranks`, pid, how it ended and its exit code.
  struct FirstFailure {
    size_t index = 0;   ///< in `ranks`
    pid_t pid = -1;     ///< its pid
    std::string how;    ///< "exited with code 1", "was killed by signal 9 (SIGKILL)[: out of memory ...]"
    int exitCode = 1;   ///< shell-style
  };
  /// Set once a rank's failure stopped the job (not for signals, exit timeouts or spawn errors).
  const std::optional<FirstFailure>& firstFailure() const { return firstFailure_; }
  /// Global rank -> pid of every running rank.
  std::map<int, pid_t> runningPids() const;
  /// Pids of the ranks given up after SIGKILL (see killWaitS); they may still be children of this process.
  std::vector<pid_t> abandonedPids() const;
  /// The spawn failure that stopped the job, if any.
  const std::optional<IoError>& spawnError() const { return spawnError_; }
  /// Lines for the user (one per decision, e.g. the failure summary), oldest first; clears them.
  std::vector<std::string> takeNotices();

 private:
  /// Sends the decision's signal to every running rank's group (Kill: with a warning per rank).
  void carryOut(const JobDecision& decision);
  /// The host of rank `index`, "localhost" when its spec names none.
  std::string host(size_t index) const;
  /// "rank R (HOST pid P)".
  std::string who(size_t index) const;

  const std::vector<RankSpec>& ranks_;  ///< the job, owned by the caller
  SupervisorOptions options_;           ///< grace and exit timeout
  Spawner& spawner_;                    ///< starts ranks and delivers signals
  JobController controller_;            ///< decides; slot i is ranks_[i]
  std::vector<pid_t> pids_;             ///< parallel to ranks_, -1 until started
  size_t started_ = 0;                  ///< number of start() calls that succeeded
  std::optional<IoError> spawnError_;   ///< see spawnError()
  std::optional<FirstFailure> firstFailure_;  ///< see firstFailure()
  std::vector<std::string> notices_;    ///< see takeNotices()
  std::string firstClean_;              ///< who() of the clean exit that started the exit timeout
};

}  // namespace dsrun
