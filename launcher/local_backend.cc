#include "launcher/local_backend.h"

#include "launcher/python_interpreter.h"

namespace dsrun {

std::vector<NodeCommand> LocalBackend::nodeCommands(const WorldPlan&, const LaunchContext&) const { return {}; }

int LocalBackend::run(const WorldPlan& plan, const LaunchContext& ctx) {
  if (!ctx.options.launch.noPython) checkPythonInterpreter(ctx.options.launch.python, ctx.launcherEnv);
  return runLocalJob(rankSpecsForNode(plan, plan.localNode, ctx.launcherEnv), localJobOptions(ctx.options, ctx.launcherPid));
}

}  // namespace dsrun
