#include "launcher/local_backend.h"

#include <unistd.h>

#include <optional>

#include "common/logging.h"
#include "common/strings.h"
#include "launcher/backends/backend_site.h"
#include "launcher/orphan_guard.h"
#include "launcher/python_interpreter.h"

namespace dsrun::launcher {

std::vector<NodeCommand> LocalBackend::nodeCommands(const WorldPlan&, const LaunchContext&) const { return {}; }

int LocalBackend::run(const WorldPlan& plan, const LaunchContext& ctx) {
  if (!ctx.options.launch.noPython) checkPythonInterpreter(ctx.options.launch.python, ctx.launcherEnv);
  // kill -9 of dsrun: the ranks die of PDEATHSIG, but what they started (data-loader workers, a shell's
  // children) is re-parented to init. The guard, a forked child blocked on a pipe only dsrun writes, then
  // runs the kill command of the pdsh path on this host: every process whose environment holds this job's
  // DSRUN_JOB_ID gets SIGTERM, SIGKILL after the grace (docs/local_launch.md "When dsrun itself is killed").
  const std::string nodeLaunch = realBackendSite().node.nodeLaunch;
  std::optional<OrphanGuard> guard;
  if (::access(nodeLaunch.c_str(), X_OK) == 0) {
    Command kill;
    kill.argv = {nodeLaunch, "--kill", "--job_id=" + plan.jobId,
                 strCat("--kill_grace_s=", ctx.options.launch.stop.killGrace.count())};
    kill.env = ctx.launcherEnv;
    guard.emplace(kill);
  } else {
    DSRUN_LOG(WARN) << "dsrun-launch not found at '" << nodeLaunch << "': if dsrun is killed with SIGKILL, processes "
                    << "the ranks started may outlive it";
  }
  const int code =
      runLocalJob(rankSpecsForNode(plan, plan.localNode, ctx.launcherEnv), localJobOptions(ctx.options, ctx.launcherPid));
  if (guard) guard->disarm();
  return code;
}

}  // namespace dsrun::launcher
