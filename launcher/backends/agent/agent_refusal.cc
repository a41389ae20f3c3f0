// AgentJob::onRefused: an agent dsrun dialled refused what dsrun sent it (its launch, a TreeGo after the tree's
// assembly, or an adoption). Such an agent keeps dsrun's connection and goes on beating, but will never start or report
// what it refused, so without this the job waited for those ranks' ends forever: at 1,000 agents dsrun sat
// after a stop with every remaining root connected and nothing left to come (docs/benchmarks.md "Launch at
// scale"). Split from agent_job.cc, which keeps the connections and the driver's events.
#include "common/logging.h"
#include "common/strings.h"
#include "launcher/backends/agent/agent_job.h"

namespace dsrun::launcher {

void AgentJob::onRefused(size_t nodeIndex, const std::string& what) {
  Node& node = *nodes_[nodeIndex];
  DSRUN_LOG(DEBUG) << what;
  if (assembling_) {
    // Its held launch refused: nothing has started anywhere, and its report will not come.
    node.client->close();
    node.channel->closed(what);
    return onProbeLost(nodeIndex, what);
  }
  if (node.channel->launch().has_tree_adopt()) {
    // An adoption refused (the node gave the job up, or runs another under its id): the node is as lost as
    // one that cannot be reached, and its children, which may still run, are adopted in turn.
    node.client->close();
    node.channel->closed(what);
    return onRootLost(nodeIndex, what);
  }
  // Its launch (or the TreeGo that releases it after the assembly) refused: the failure that stops the job, in the
  // agent's words. Nothing below this agent was forwarded or released, so no rank of its subtree will start.
  // The connection stays until the job ends.
  job_->onSpawnFailed(nodeIndex, what, wallClockUs(), steadyNow());
  std::vector<int> ranks;
  for (size_t i = nodeIndex; i < subtreeEnd_[nodeIndex]; ++i) {
    ranks.insert(ranks.end(), nodes_[i]->ranks.begin(), nodes_[i]->ranks.end());
  }
  job_->onRanksNeverStarted(ranks, steadyNow());
}

}  // namespace dsrun::launcher
