#pragma once
// --dry_run's "agent_launch" (star or tree, and why) and "agent_tree" (the tree a tree launch would take), as JSON.

#include <string>

#include "launcher/backends/agent/agent_tree_choice.h"
#include "launcher/world_plan.h"

namespace dsrun::launcher {

/// {"width", "hosts", "roots", "levels", "starts": treeStartRule, "listing": agentTreeListing's lines},
/// serialized. `meshProbe`: the launch runs the mesh probe (not --no_mesh_probe).
std::string agentTreeDryRunJson(const WorldPlan& plan, int width, bool meshProbe);

/// When a tree launch of `hosts` hosts in `levels` levels starts its ranks, in words (agent_tree_assembly.cc):
/// below its roots it is assembled first, with the mesh probe's pairs when `meshProbe`. Pure.
std::string treeStartRule(size_t hosts, int levels, bool meshProbe);

/// --dry_run's "agent_launch": {"tree_width" (0: the star), "why"}, serialized.
std::string agentLaunchDryRunJson(const AgentTreeChoice& choice);

}  // namespace dsrun::launcher
