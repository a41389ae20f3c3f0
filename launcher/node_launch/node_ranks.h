#pragma once
// nodeRankSpecs: dsrun-launch's node mode rebuilds its node's ranks with the launcher's own planner
// (planRanks, from the RankProgram its flags carry), so RANK, LOCAL_RANK, CUDA_VISIBLE_DEVICES, cores and
// argv follow exactly the rules the launcher used for --dry_run.

#include <vector>

#include "supervision/local_job.h"
#include "supervision/rank_spec.h"
#include "launcher/environment.h"
#include "launcher/node_launch/node_launch_args.h"

namespace dsrun::launcher {

/// The RankSpecs of node `args.nodeRank` of `args.worldInfo`. `env` is this process's environment: the
/// launcher already exported the propagated variables into it, so they are not propagated again (no
/// second PYTHONPATH prefix, no .deepspeed_env re-read); every rank gets `env` plus the rank contract.
/// `physicalCores` is this host's core count (--bind_cores_to_rank without --bind_core_list).
/// Throws ParseError/ConfigError for a bad world_info or a node rank outside it.
std::vector<RankSpec> nodeRankSpecs(const NodeLaunchArgs& args, const EnvMap& env, int physicalCores);

/// The runLocalJob settings `args` asks for.
LocalJobOptions nodeJobOptions(const NodeLaunchArgs& args);

}  // namespace dsrun::launcher
