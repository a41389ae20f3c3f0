#pragma once
// --dry_run's "agent_launch" (star or tree, and why) and "agent_tree" (the tree a tree launch would take), as JSON.

#include <string>

#include "launcher/backends/agent/agent_tree_choice.h"
#include "launcher/world_plan.h"

namespace dsrun::launcher {

/// {"width", "hosts", "roots", "levels", "listing": agentTreeListing's lines}, serialized.
std::string agentTreeDryRunJson(const WorldPlan& plan, int width);

/// --dry_run's "agent_launch": {"tree_width" (0: the star), "why"}, serialized.
std::string agentLaunchDryRunJson(const AgentTreeChoice& choice);

}  // namespace dsrun::launcher
