#pragma once
// LocalBackend: runs the ranks of one node of the plan on this machine with runLocalJob (supervision/local_job.h).
// Used for single-host jobs and for --no_ssh (this node = --node_rank).

#include <vector>

#include "supervision/local_job.h"
#include "supervision/rank_spec.h"
#include "launcher/backend.h"

namespace dsrun::launcher {

class LocalBackend : public Backend {
 public:
  std::string_view name() const override { return "local"; }
  std::optional<std::string> unavailableReason() const override { return std::nullopt; }
  /// Always empty: nothing runs through a remote command.
  std::vector<NodeCommand> nodeCommands(const WorldPlan& plan, const LaunchContext& ctx) const override;
  /// Runs plan.localNode's ranks to completion; returns runLocalJob's exit code.
  int run(const WorldPlan& plan, const LaunchContext& ctx) override;
};

/// The RankSpecs of host `nodeRank`: each rank's Command has its argv, `baseEnv` overlaid with its planned
/// env (planned values win), an empty cwd (inherit) and its cores.
std::vector<RankSpec> rankSpecsForNode(const WorldPlan& plan, int nodeRank, const EnvMap& baseEnv);

/// The runLocalJob settings the command line asks for; `launcherPid` names the --save_pid file.
LocalJobOptions localJobOptions(const Options& options, int launcherPid);

}  // namespace dsrun::launcher
