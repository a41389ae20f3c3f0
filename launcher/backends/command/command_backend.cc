#include "launcher/backends/command/command_backend.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "common/error.h"
#include "common/strings.h"
#include "launcher/backends/command/command_job.h"

namespace dsrun::launcher {

std::optional<std::string> CommandBackend::unavailableReason() const {
  const std::string tool = requiredTool();
  if (!site_.inPath(tool)) return strCat("'", tool, "' not found in PATH");
  return std::nullopt;
}

std::vector<NodeCommand> CommandBackend::nodeCommands(const WorldPlan& plan, const LaunchContext& ctx) const {
  return {NodeCommand{plan.hosts.empty() ? std::string() : plan.hosts.front().host, buildCommand(plan, ctx).argv}};
}

int CommandBackend::run(const WorldPlan& plan, const LaunchContext& ctx) {
  if (::access(site_.node.nodeLaunch.c_str(), X_OK) != 0) {
    throw BackendUnavailable(std::string(name()), strCat("dsrun-launch not found at '", site_.node.nodeLaunch, "'"),
                             "install dsrun-launch next to dsrun, in ../lib/dsrun or in PATH, "
                             "or set DSRUN_LAUNCH to its path");
  }
  CommandJobSpec spec;
  spec.command = buildCommand(plan, ctx);
  spec.kill = killCommand(plan, ctx);
  if (signalCommand(plan, ctx, {SIGUSR1})) {
    spec.signal = [this, &plan, &ctx](const std::vector<int>& signals) { return *signalCommand(plan, ctx, signals); };
  }
  spec.stopSignal = stopSignal();
  spec.launch = ctx.options.launch;
  spec.program = ctx.options.userScript;
  for (const PlannedRank& r : plan.ranks) spec.rankHosts[r.rank] = r.host;
  beforeLaunch(plan, ctx);
  try {
    const CommandJobResult result = runCommandJob(spec);
    afterLaunch(plan, ctx);
    return result.exitCode;
  } catch (...) {
    afterLaunch(plan, ctx);
    throw;
  }
}

}  // namespace dsrun::launcher
