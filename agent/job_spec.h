#pragma once
// JobSpec: one job the agent is asked to run, as plain values. The Session makes it from the launcher's
// LaunchRequest (agent/session_wire.h); the JobTable and the RankStarter below it never see protobuf.

#include <string>
#include <vector>

#include "supervision/rank_spec.h"

namespace dsrun::agent {

struct JobSpec {
  std::string id;               ///< unique among the agent's running jobs
  /// The ranks to start. Each command's env holds only the launcher's variables: the agent's own
  /// environment goes under them when the rank starts (RankStarter).
  std::vector<RankSpec> ranks;
  std::string eachRankLogDir;   ///< non-empty: output goes to <dir>/<logTag>_rank<R>.log, not streamed
  std::string logTag;           ///< file-name prefix of the each-rank logs
  double killGraceS = 0;        ///< SIGTERM -> SIGKILL delay; <= 0: the agent's default
  double progressIntervalS = 0; ///< > 0: ranks report their step through DSRUN_PROGRESS_FILE, polled this often
};

}  // namespace dsrun::agent
