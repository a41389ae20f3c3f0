#pragma once
// CommandBackend: the base of backends that start the whole job with one local command (pdsh, mpirun,
// srun), after DeepSpeed's MultiNodeRunner.get_cmd (docs/style.md §4): a subclass only builds Commands;
// running them, failure detection and stopping are shared (command_job.h).

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/command.h"
#include "launcher/backend.h"
#include "launcher/backends/backend_site.h"
#include "launcher/backends/node_launch_command.h"

namespace dsrun::launcher {

class CommandBackend : public Backend {
 public:
  explicit CommandBackend(BackendSite site) : site_(std::move(site)) {}

  /// "'<tool>' not found in PATH" when requiredTool() is missing.
  std::optional<std::string> unavailableReason() const override;

  /// One entry: the launcher command, under the first host's name.
  std::vector<NodeCommand> nodeCommands(const WorldPlan& plan, const LaunchContext& ctx) const override;

  /// checkBeforeLaunch, then the command with runCommandJob; returns the job's exit code.
  int run(const WorldPlan& plan, const LaunchContext& ctx) override;

  /// The launcher command (argv, its whole environment, cwd). Pure. Throws ConfigError for what the
  /// backend cannot do (e.g. --include with an MPI backend), as DeepSpeed's validate_args does.
  virtual Command buildCommand(const WorldPlan& plan, const LaunchContext& ctx) const = 0;

  /// A command that stops the job on every node, for launchers whose own death leaves remote ranks
  /// running (pdsh). nullopt: signalling the launcher command is enough (mpirun, srun).
  virtual std::optional<Command> killCommand(const WorldPlan&, const LaunchContext&) const { return std::nullopt; }

  /// A command that passes `signals` (in order) to the ranks on every node, for launchers that do not
  /// forward signals themselves (pdsh). nullopt: SIGUSR1/SIGUSR2 go to the launcher command's process
  /// (srun and mpirun forward them), and stop signals stop the job as killCommand says.
  virtual std::optional<Command> signalCommand(const WorldPlan&, const LaunchContext&, const std::vector<int>&) const {
    return std::nullopt;
  }

 protected:
  /// The program whose presence makes this backend available (DeepSpeed's backend_exists()).
  virtual std::string requiredTool() const = 0;
  /// Checks and preparation before the launch (pdsh: the passwordless-ssh check). Default: none.
  virtual void beforeLaunch(const WorldPlan&, const LaunchContext&) {}
  /// Undo what beforeLaunch prepared. Default: none.
  virtual void afterLaunch(const WorldPlan&, const LaunchContext&) {}
  /// The signal that stops the launcher command when there is no kill command.
  virtual int stopSignal() const { return 15; }

  BackendSite site_;  ///< paths and PATH lookup
};

}  // namespace dsrun::launcher
