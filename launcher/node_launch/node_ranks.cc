#include "launcher/node_launch/node_ranks.h"

#include "common/env_contract.h"
#include "common/error.h"
#include "common/strings.h"
#include "launcher/local_backend.h"
#include "launcher/node_launch/world_info.h"
#include "launcher/world_plan.h"

namespace dsrun::launcher {

std::vector<RankSpec> nodeRankSpecs(const NodeLaunchArgs& args, const EnvMap& env, int physicalCores) {
  const ResourcePool world = decodeWorldInfo(args.worldInfo);
  if (args.nodeRank < 0 || args.nodeRank >= static_cast<int>(world.size())) {
    throw ConfigError(strCat("--node_rank: expected a node in [0, ", world.size(), ") of --world_info, got ",
                             args.nodeRank));
  }
  // The world dsrun planned, re-planned here with the same code (planRanks) for this node's ranks: every rank's
  // slot, and the commands of this node's only (rankSpecsForNode). The exported variables arrived in `env`
  // already (rankSpecsForNode lays the ranks' own over it).
  const RankProgram program = args.program();
  WorldPlan plan;
  plan.hosts = world;
  plan.masterAddr = args.masterAddr;
  plan.masterPort = args.masterPort;
  plan.jobId = args.launch.jobId;
  plan.multiNode = true;
  if (program.launch.bindCoresToRank) plan.coreList = bindableCores(program.launch, env, physicalCores);
  planRanks(plan, program, RankDetail::Slots);
  return rankSpecsForNode(plan, args.nodeRank, env);
}

LocalJobOptions nodeJobOptions(const NodeLaunchArgs& args) {
  LocalJobOptions job = args.launch.localJobOptions();
  // dsrun runs the exit timeout job-wide from this line
  job.announceCleanExit = args.launch.stop.exitTimeout.has_value();
  job.rootCauseAsLines = true;  // dsrun quotes them in the job's one root-cause block
  job.program = args.userScript;
  return job;
}

}  // namespace dsrun::launcher
