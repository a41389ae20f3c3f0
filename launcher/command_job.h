#pragma once
// CommandJob: runs the one local command a CommandBackend built (pdsh, mpirun, srun) and turns it into
// dsrun's failure semantics, decided by a JobController (common/job_controller.h) whose one slot is the
// launcher command: output is forwarded line by line, the first rank failure any node reports
// (failure_line.h) or a SIGINT/SIGTERM/SIGHUP to dsrun stops the job everywhere (the backend's kill
// command, else a signal to the launcher command), and the job's exit code is the first failure's.
// How a stop or a kill reaches the nodes (kill command, signal command, escalation on the launcher
// command after the grace) is this file's.
// With a signal command (pdsh), every signal dsrun receives reaches the ranks as itself, in order: the
// signals are queued and passed on by one signal command at a time; a stop signal stops the job that way
// (SIGINT stays SIGINT), the kill command is the backstop after the grace and the answer to a second one.
// With a kill command, an OrphanGuard runs it if dsrun itself is killed. --exit_timeout_s is job-wide: the
// first rank that finishes cleanly on any node (its "finished cleanly" line) starts the clock for all.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/command.h"
#include "launcher/failure_line.h"
#include "launcher/launch_settings.h"

namespace dsrun {

struct CommandJobSpec {
  Command command;              ///< the launcher command
  std::optional<Command> kill;  ///< stops the job on every node (pdsh); nullopt: signal `command` instead
  /// Builds the command passing these signals to every node's ranks (pdsh); empty: USR1/USR2 go to
  /// `command`'s process, stop signals stop the job as below.
  std::function<Command(const std::vector<int>&)> signal;
  int stopSignal = 15;          ///< what `command` gets when the job must stop and there is no kill command
  /// The ranks' settings; applied job-wide here: launch.killGraceS is how long the job may take to stop
  /// before SIGKILL, launch.exitTimeoutS runs from the first "finished cleanly" line on any node (<0: off).
  RankLaunchSettings launch;
  std::string program;          ///< the user's script, named in the closing root-cause block
  /// Every planned rank's host by global rank: the exit timeout names the ranks not reported finished.
  std::map<int, std::string> rankHosts;
};

/// What happened.
struct CommandJobResult {
  int exitCode = 0;                        ///< first failure's code, else 128+signal, else the command's
  std::optional<RankFailure> failure;      ///< first failure seen
  std::optional<int> signal;               ///< first signal dsrun received
};

/// Runs the job to completion (main thread: it installs signal handlers while it runs). Throws IoError
/// when the command cannot be spawned. Prints one summary line on stderr when the job failed.
CommandJobResult runCommandJob(const CommandJobSpec& spec);

}  // namespace dsrun
