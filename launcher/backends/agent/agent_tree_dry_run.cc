#include "launcher/backends/agent/agent_tree_dry_run.h"

#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "launcher/backends/agent/agent_mesh_plan.h"
#include "launcher/backends/agent/agent_tree_listing.h"
#include "launcher/backends/agent/agent_tree_plan.h"

namespace dsrun::launcher {

std::string treeStartRule(size_t hosts, int levels, bool meshProbe) {
  // As AgentJob::run decides: the probe from two hosts on; the assembly round below the roots, probe or not.
  const std::string probe =
      meshProbe && hosts > 1 ? strCat(" and the mesh probe's ", meshProbePairCount(hosts), " pairs connected") : "";
  if (levels > 1) {
    return strCat("once every agent of the tree holds its launch", probe,
                  probe.empty() ? " (no mesh probe: --no_mesh_probe)" : "", ": TreeGo, one pass down");
  }
  return strCat("once dsrun has welcomed every agent (all are roots)", probe);
}

std::string agentTreeDryRunJson(const WorldPlan& plan, int width, bool meshProbe) {
  const AgentTreePlan tree = planAgentTree(plan.hosts.size(), width);
  nlohmann::ordered_json out = {{"width", width},
                                {"hosts", tree.size()},
                                {"roots", tree.roots().size()},
                                {"levels", tree.levels()},
                                {"starts", treeStartRule(tree.size(), tree.levels(), meshProbe)},
                                {"listing", agentTreeListing(tree, plan)}};
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string agentLaunchDryRunJson(const AgentTreeChoice& choice) {
  const nlohmann::ordered_json out = {{"tree_width", choice.width}, {"why", choice.why}};
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace dsrun::launcher
