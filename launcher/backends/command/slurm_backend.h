#pragma once
// slurm: DeepSpeed's SlurmRunner. `srun -n N [launcher args] --nodelist=HOSTS [--nodes=N] [--gpus=N]
// [--ntasks-per-node=P] --kill-on-bad-exit=1 --export=ALL,K=V,... dsrun-launch --rank_env=slurm ...`.
// Differences from DeepSpeed, each for correctness: srun always gets --nodelist with the hostfile's active
// hosts (srun has no --include, and without a nodelist Slurm places ranks on hosts the hostfile does not
// name), and a host Slurm does not know is an error before anything starts; --ntasks-per-node keeps the planned layout when every host has
// the same slots; --kill-on-bad-exit=1 stops every task at the first failure (unless the launcher args
// say otherwise); values containing ',' cannot be written into --export, so every export is also put
// into srun's own environment, which --export=ALL hands to the tasks byte for byte.
// Signals: srun answers SIGTERM and SIGHUP by SIGKILLing every task at once ("forcing job termination") and
// a single SIGINT by printing the step's status, so dsrun does not signal srun to stop a job. srun is
// named --job-name=<dsrun job id> and every signal dsrun receives reaches the tasks through
// `scancel --name=ID --signal=SIG` (the job's steps only: dsrun-launch's rank mode, which passes it to its
// rank); the kill command, after --kill_grace_s, on a second Ctrl-C or when dsrun is killed, is
// `scancel --name=ID --signal=KILL`. With a job name in the launcher args (-J/--job-name) dsrun cannot
// address the job alone and signals srun as before.

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/backends/ssh_check.h"
#include "launcher/backends/command/command_backend.h"

namespace dsrun::launcher {

class SlurmBackend : public CommandBackend {
 public:
  /// `runInfo` runs `sinfo` (fake in tests).
  explicit SlurmBackend(BackendSite site, CommandRunner runInfo = runCapturedDefault())
      : CommandBackend(std::move(site)), runInfo_(std::move(runInfo)) {}
  std::string_view name() const override { return "slurm"; }
  std::string unavailableHint() const override { return "load the Slurm client tools (srun, sinfo) first"; }
  Command buildCommand(const WorldPlan& plan, const LaunchContext& ctx) const override;
  /// Every active host must be a Slurm NodeName (`sinfo -h -N -o %N`); throws ConfigError naming the first
  /// that is not, with the known nodes. Run by beforeLaunch.
  void checkHostsKnown(const WorldPlan& plan, const LaunchContext& ctx) const;
  std::optional<Command> killCommand(const WorldPlan& plan, const LaunchContext& ctx) const override;
  std::optional<Command> signalCommand(const WorldPlan& plan, const LaunchContext& ctx,
                                       const std::vector<int>& signals) const override;

 protected:
  std::string requiredTool() const override { return "sinfo"; }
  void beforeLaunch(const WorldPlan& plan, const LaunchContext& ctx) override { checkHostsKnown(plan, ctx); }

 private:
  static CommandRunner runCapturedDefault();
  /// -J/--job-name in --launcher_args: the user names the job, scancel cannot find it by dsrun's id.
  static bool userNamesJob(const LaunchContext& ctx);
  /// `sh -c "scancel --name=ID --signal=S1 && sleep 0.1 && ..."`: the signals in order, 100 ms apart (the
  /// control lines' gap: closer signals merge in the ranks).
  static Command scancel(const WorldPlan& plan, const LaunchContext& ctx, const std::vector<std::string>& signals);
  std::set<std::string> slurmNodeNames(const LaunchContext& ctx) const;
  CommandRunner runInfo_;  ///< runs sinfo
};

}  // namespace dsrun::launcher
