#include "launcher/backends/agent/agent_tree_dry_run.h"

#include <nlohmann/json.hpp>

#include "launcher/backends/agent/agent_tree_listing.h"
#include "launcher/backends/agent/agent_tree_plan.h"

namespace dsrun::launcher {

std::string agentTreeDryRunJson(const WorldPlan& plan, int width) {
  const AgentTreePlan tree = planAgentTree(plan.hosts.size(), width);
  nlohmann::ordered_json out = {{"width", width},
                                {"hosts", tree.size()},
                                {"roots", tree.roots().size()},
                                {"levels", tree.levels()},
                                {"listing", agentTreeListing(tree, plan)}};
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string agentLaunchDryRunJson(const AgentTreeChoice& choice) {
  const nlohmann::ordered_json out = {{"tree_width", choice.width}, {"why", choice.why}};
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace dsrun::launcher
