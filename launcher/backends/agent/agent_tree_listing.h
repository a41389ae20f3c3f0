#pragma once
// The agent tree as --dry_run shows it: an indented listing, one line per host, that stays short at any size.
// When the whole tree would take more than `maxLines` lines, only the levels that fit are listed and each
// listed host with hosts below the cut says how many and which (subtrees are contiguous runs of hosts, so
// "+ 38 below: node-5 .. node-42, ranks 40-343" names them all).

#include <cstddef>
#include <string>
#include <vector>

#include "launcher/backends/agent/agent_tree_plan.h"
#include "launcher/world_plan.h"

namespace dsrun::launcher {

/// About a screenful: every host of a 64-node job, the top levels of a larger one.
inline constexpr size_t kTreeListingLines = 64;

/// One line per listed host, indented two spaces per level: "node-3 (ranks 24-31)", with
/// " + N below: FIRST .. LAST, ranks A-B" on a host whose subtree is cut. The roots are always listed.
std::vector<std::string> agentTreeListing(const AgentTreePlan& tree, const WorldPlan& plan,
                                          size_t maxLines = kTreeListingLines);

}  // namespace dsrun::launcher
