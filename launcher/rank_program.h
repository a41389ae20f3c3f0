#pragma once
// RankProgram: what every rank of a job runs, as both sides of the dsrun -> dsrun-launch line know it. dsrun
// takes it from its Options (rankProgram, world_plan.h), dsrun-launch from its own flags
// (NodeLaunchArgs::program), and both plan ranks from it with the same code (planRanks), so neither side
// rebuilds the other's whole option set.

#include <string>
#include <vector>

#include "launcher/launch_settings.h"

namespace dsrun::launcher {

struct RankProgram {
  std::string script;             ///< the user's script or program
  std::vector<std::string> args;  ///< its arguments, untouched
  RankLaunchSettings launch;      ///< --python, --module, --no_python, --no_local_rank, core binding, ...
};

/// The argv of one rank (DeepSpeed's launch.py): [PYTHON -u [-m]] SCRIPT [--local_rank=N] ARGS...
std::vector<std::string> rankArgv(const RankProgram& program, int localRank);

}  // namespace dsrun::launcher
