#pragma once
// runLocalJob: what DeepSpeed's launch.py does on one node. Starts every rank in its own process group,
// forwards SIGINT/SIGTERM/SIGHUP, terminates the siblings of a failed rank, and returns the job's exit code.
// Shared by `dsrun` (local mode), `dsrun-launch` (per-node mode for pdsh/ssh) and, through its parts,
// the agent.

#include <string>
#include <vector>

#include "common/stop_times.h"
#include "supervision/rank_spec.h"

namespace dsrun {

struct LocalJobOptions {
  std::string eachRankLogDir;  ///< non-empty: each rank's stdout+stderr go to a file there (DeepSpeed naming)
  bool tagOutput = false;      ///< prefix each forwarded line with "host:rank | "
  StopTimes stop;              ///< SIGTERM -> SIGKILL delay; after the first clean exit, how long the others may run
  int savePid = 0;             ///< non-zero: DeepSpeed's --save_pid file /tmp/<savePid>.deepspeed (see PidFile)
  bool announceCleanExit = false;  ///< print "dsrun: rank R (HOST pid P) finished cleanly" (dsrun-launch, so
                                   ///< that dsrun can run --exit_timeout_s job-wide)
  /// How a failed job ends (docs/launcher.md "When a job fails"): false (dsrun on one machine): the root-cause
  /// block (common/root_cause.h) as its last lines; true (dsrun-launch on a node of a larger job): the failing
  /// rank's stderr tail and log file as "dsrun: rank R (HOST) stderr| LINE" / "... log file: PATH" lines, which
  /// dsrun collects from every node and quotes in its own block (launcher/failure_line.h).
  bool rootCauseAsLines = false;
  std::string program;  ///< the user's script, named in the root-cause block's title
  /// Readable descriptors carrying control lines (supervision/launch_lines.h), owned by the caller: each line
  /// acts as that signal received; end of file on one acts as SIGTERM (the controller is gone).
  std::vector<int> controlFds;
  /// > 0: hang detection (common/hang_watch.h): each rank gets DSRUN_PROGRESS_FILE; when a rank's step has not
  /// moved for this long, the stacks of every rank go to <hangDir or the cwd>/dsrun-hang-<jobId>/rank<N>.txt
  /// and the job fails (code 1) as for a failing rank.
  double hangTimeoutS = 0;
  std::string hangDir;  ///< where dsrun-hang-<jobId> goes; empty: the current directory
  std::string jobId;    ///< names the progress and stack directories
};

/// Runs `ranks` to completion on this machine. Returns 0 if every rank exited 0; otherwise the first
/// failing rank's exit code (128+signal for a signal), after printing one summary line naming it.
/// Throws IoError if a rank cannot be spawned (after stopping the ones already started), ConfigError
/// or IoError if eachRankLogDir or the pid file cannot be used (before anything is started).
/// Call from the main thread: it installs signal handlers for its duration and restores them.
/// See docs/local_launch.md for the process model, signals and exit codes.
int runLocalJob(const std::vector<RankSpec>& ranks, const LocalJobOptions& options);

}  // namespace dsrun
