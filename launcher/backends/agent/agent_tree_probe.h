#pragma once
// The mesh probe of a tree launch, dsrun's side (docs/agent.md "The mesh probe in a tree"): each root gets its
// signed TreeLaunch with `probe`, every node of the tree probes the agents agent_mesh_plan.h names for it
// (they travel in its own signed TreeNodePart) and holds its ranks, the reports merge up the tree, and dsrun
// sends TreeGo down the same connections only if no pair is broken and no node was lost: nothing of the job
// starts otherwise. This file turns the roots' reports and the nodes lost meanwhile into one verdict.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "proto/agent.pb.h"

namespace dsrun::launcher {

/// What the tree's probe found, summed over the roots.
struct TreeProbeVerdict {
  std::vector<std::string> broken;                  ///< "dsn2 cannot reach dsn3:29600: ..." in host order, capped
  uint64_t brokenCount = 0;                         ///< every broken pair, listed or not
  std::vector<std::pair<std::string, std::string>> pairs;  ///< the listed broken pairs as {from, to host}
  std::vector<std::string> lost;                    ///< "agent dsn3 (via dsn1): cause", in host order
  std::vector<std::string> lostHosts;               ///< the lost nodes, in host order
  uint64_t probedPairs = 0;                         ///< pairs the nodes probed
  uint32_t slowestMicros = 0;                       ///< slowest connection made
  uint64_t unprobedNodes = 0;                       ///< nodes under older agents: only probed
};

/// Merges `reports` (one per root that answered, any order) and `lost` (host -> the line naming it) into a
/// verdict; `order` is the job's host order, which sorts both (a host not in it goes last). Pure.
TreeProbeVerdict treeProbeVerdict(const std::vector<wire::TreeProbeReport>& reports,
                                  const std::map<std::string, std::string>& lost,
                                  const std::vector<std::string>& order);

/// The probe targets of every host of `hosts` (the job's host order) agent_mesh_plan.h gives, as "host:port".
std::vector<std::vector<std::string>> treeProbeTargets(const std::vector<std::string>& hosts, int agentPort);

}  // namespace dsrun::launcher
