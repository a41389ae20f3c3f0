#pragma once
// The LaunchRequest the agent backend sends one node: its planned ranks (argv, the plan's environment, cwd,
// cores) and the job's log, grace and hang settings. AgentJob sends exactly these to a star's agents, and a tree
// launch (agent_tree_launch.h) carries them, so that every agent expands byte for byte what a star launch would
// have sent it. MASTER_PORT is the plan's: an elastic world is planned with its picked port (checkMasterPort).

#include <optional>
#include <string>
#include <vector>

#include "launcher/world_plan.h"
#include "proto/agent.pb.h"

namespace dsrun::launcher {

/// What every node's request shares besides the plan.
struct NodeLaunchSettings {
  double killGraceS = 30;          ///< SIGTERM -> SIGKILL; 0 is sent as 1 ms (the wire's 0 means "the agent's")
  std::string eachRankLogDir;      ///< absolute on every node; empty: output streamed back
  std::string logTag;              ///< each-rank log prefix
  double hangTimeoutS = 0;         ///< > 0: the agents report progress every min(1 s, a quarter of it)
  std::string cwd;                 ///< the ranks' working directory
  /// Set: --rendezvous agent, and where rank 0's agent is (root unset here: AgentJob marks that node's request).
  std::optional<wire::StoreRendezvous> rendezvous;
};

/// The request for host `nodeRank` of `plan`: its ranks in local-rank order, each with the plan's argv,
/// environment (in name order) and cores.
wire::LaunchRequest nodeLaunchRequest(const WorldPlan& plan, int nodeRank, const NodeLaunchSettings& settings);

/// Each host's ranks (plan.ranksOnNode of every host), in one pass over the ranks: ranksOnNode per host scans
/// all ranks per host, 800 million comparisons at 10,000 hosts x 8 ranks.
std::vector<std::vector<const PlannedRank*>> ranksByNode(const WorldPlan& plan);

/// nodeLaunchRequest for a host whose ranks are `ranks` (ranksByNode's), made into `out`: cleared first, so that
/// a message refilled host after host reuses its strings.
void fillNodeLaunchRequest(const WorldPlan& plan, const std::vector<const PlannedRank*>& ranks,
                           const NodeLaunchSettings& settings, wire::LaunchRequest& out);

/// The same for every host, in one pass over the ranks (nodeLaunchRequest per host would scan all ranks per host).
std::vector<wire::LaunchRequest> nodeLaunchRequests(const WorldPlan& plan, const NodeLaunchSettings& settings);

}  // namespace dsrun::launcher
