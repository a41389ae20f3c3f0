#pragma once
// RankSpec: everything needed to start one rank on this node. The launcher's planner produces these
// (from the hostfile, filters and options); the local-launch library, dsrun-launch and the agent run them.

#include <string>
#include <vector>

#include "common/command.h"

namespace dsrun {

struct RankSpec {
  int rank = 0;            ///< global rank
  int localRank = 0;       ///< position of the rank on its node
  std::string host;        ///< node name as the hostfile spells it (for messages and tags)
  Command command;         ///< argv, full environment, cwd
  std::vector<int> cores;  ///< CPU ids to bind to before exec; empty = no binding
};

}  // namespace dsrun
