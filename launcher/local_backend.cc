#include "launcher/local_backend.h"

namespace dsrun {

std::vector<NodeCommand> LocalBackend::nodeCommands(const WorldPlan&, const LaunchContext&) const { return {}; }

int LocalBackend::run(const WorldPlan& plan, const LaunchContext& ctx) {
  return runLocalJob(rankSpecsForNode(plan, plan.localNode, ctx.launcherEnv), localJobOptions(ctx.options, ctx.launcherPid));
}

}  // namespace dsrun
