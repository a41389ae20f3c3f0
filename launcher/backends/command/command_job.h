#pragma once
// CommandJob: the command medium's loop: runs the one local command a CommandBackend built (pdsh, mpirun,
// srun) as a CommandChannel (command_channel.h), the driver's only node, and reads its output into the
// RemoteJob driver (remote_job/remote_job.h), which decides: the first rank failure any node reports
// (failure_line.h) or a SIGINT/SIGTERM/SIGHUP to dsrun stops the job everywhere, a second one kills,
// --exit_timeout_s runs job-wide from the first rank that finishes cleanly on any node, and the job's exit
// code is the first failure's.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/command.h"
#include "launcher/failure_line.h"
#include "launcher/launch_settings.h"

namespace dsrun::launcher {

struct CommandJobSpec {
  Command command;              ///< the launcher command
  std::optional<Command> kill;  ///< stops the job on every node (pdsh); nullopt: signal `command` instead
  /// Builds the command passing these signals to every node's ranks (pdsh); empty: USR1/USR2 go to
  /// `command`'s process, stop signals stop the job as below.
  std::function<Command(const std::vector<int>&)> signal;
  int stopSignal = 15;          ///< what `command` gets when the job must stop and there is no kill command
  /// The ranks' settings; applied job-wide here: launch.stop.killGrace is how long the job may take to stop
  /// before SIGKILL, launch.stop.exitTimeout runs from the first "finished cleanly" line on any node.
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

}  // namespace dsrun::launcher
