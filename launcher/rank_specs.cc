// rankSpecsForNode and localJobOptions (declared in local_backend.h) live apart from LocalBackend so
// that code which only builds RankSpecs does not pull runLocalJob in.

#include "launcher/local_backend.h"

namespace dsrun::launcher {

std::vector<RankSpec> rankSpecsForNode(const WorldPlan& plan, int nodeRank, const EnvMap& baseEnv) {
  std::vector<RankSpec> specs;
  for (const PlannedRank* slotsOnly : plan.ranksOnNode(nodeRank)) {
    // A plan made with RankDetail::Slots (dsrun-launch's of the whole world) gets this node's commands only.
    const std::optional<PlannedRank> planned =
        plan.deferredCommands ? std::optional<PlannedRank>(withCommand(plan, *slotsOnly)) : std::nullopt;
    const PlannedRank* r = planned ? &*planned : slotsOnly;
    RankSpec spec;
    spec.rank = r->rank;
    spec.localRank = r->localRank;
    spec.host = r->host;
    spec.command.argv = r->argv;
    spec.command.env = baseEnv;
    for (const auto& [name, value] : r->env) spec.command.env[name] = value;
    spec.cores = r->cores;
    specs.push_back(std::move(spec));
  }
  return specs;
}

LocalJobOptions localJobOptions(const Options& options, int launcherPid) {
  // No job id: LocalJobOptions has none (each rank carries it in DSRUN_JOB_ID).
  LocalJobOptions job = launchSettings(options, /*jobId=*/"", launcherPid).localJobOptions();
  job.program = options.userScript;
  return job;
}

}  // namespace dsrun::launcher
