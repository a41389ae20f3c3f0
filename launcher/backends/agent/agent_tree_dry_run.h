#pragma once
// --dry_run's "agent_tree": the tree a --tree_width launch would take, as JSON.

#include <string>

#include "launcher/world_plan.h"

namespace dsrun::launcher {

/// {"width", "hosts", "roots", "levels", "listing": agentTreeListing's lines}, serialized.
std::string agentTreeDryRunJson(const WorldPlan& plan, int width);

}  // namespace dsrun::launcher
