#pragma once
// pdsh: DeepSpeed's PDSHRunner. `pdsh -S -f 1024 -w HOSTS [launcher args] <remote shell line>` where the
// remote line exports the propagated variables, cds to the launch directory and runs dsrun-launch with
// --node_rank=%n (pdsh's host index). Every word is shell-quoted and '%' doubled, so argv and values
// arrive byte for byte. The kill command runs `dsrun-launch --kill --job_id=ID` on every host, the signal
// command `dsrun-launch --signal=USR1,... --job_id=ID` (pdsh passes no signal and no stdin to its remote
// commands, so signals travel as control lines into each launcher's FIFO: launcher/node_launch/job_signal.h).

#include "launcher/backends/ssh_check.h"
#include "launcher/backends/command/command_backend.h"

namespace dsrun::launcher {

/// DeepSpeed's PDSH_MAX_FAN_OUT.
inline constexpr int kPdshMaxFanOut = 1024;

class PdshBackend : public CommandBackend {
 public:
  explicit PdshBackend(BackendSite site, CommandRunner runCheck = runCapturedDefault())
      : CommandBackend(std::move(site)), runCheck_(std::move(runCheck)) {}

  std::string_view name() const override { return "pdsh"; }
  std::string unavailableHint() const override { return "install pdsh (apt-get install pdsh), or use --launcher=ssh"; }
  Command buildCommand(const WorldPlan& plan, const LaunchContext& ctx) const override;
  std::optional<Command> killCommand(const WorldPlan& plan, const LaunchContext& ctx) const override;
  std::optional<Command> signalCommand(const WorldPlan& plan, const LaunchContext& ctx,
                                       const std::vector<int>& signals) const override;

  /// The passwordless-ssh check of the first host (unless --no_ssh_check) when MASTER_ADDR is inferred from
  /// it; the address itself is DeepSpeed's `ssh HOST hostname -I`.
  LaunchPreparation prepareLaunch(const WorldPlan& draft, const LaunchContext& ctx) override;
  /// The passwordless-ssh check `beforeLaunch` runs (unless --no_ssh_check or prepareLaunch ran it).
  Command sshCheck(const WorldPlan& plan, const LaunchContext& ctx) const;

 protected:
  std::string requiredTool() const override { return "pdsh"; }
  void beforeLaunch(const WorldPlan& plan, const LaunchContext& ctx) override;

 private:
  static CommandRunner runCapturedDefault();
  EnvMap pdshEnvironment(const LaunchContext& ctx) const;
  Command sshCheckFor(const std::string& host, const LaunchContext& ctx) const;
  std::vector<std::string> pdshPrefix(const WorldPlan& plan, const LaunchContext& ctx) const;

  CommandRunner runCheck_;  ///< runs the ssh check (fake in tests)
};

}  // namespace dsrun::launcher
