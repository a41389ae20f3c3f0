#pragma once
// planAgentTree: which agent forwards the launch to which (--tree_width; docs/agent.md "Tree launch"). Pure.
// The hosts, in plan order, are split into at most `width` contiguous spans of near-equal size; the first host
// of each span is a root (dsrun dials it) and the rest of the span is split the same way below it -- Slurm's
// route plugin splits its host list the same way (route_split_hostlist, TreeWidth). So every subtree is a
// contiguous run of hosts (and of ranks), plan order is the tree's pre-order, no process holds more than
// `width` children, and the depth is about log_width(N).

#include <cstddef>
#include <string>
#include <vector>

namespace dsrun::launcher {

/// The tree over the plan's hosts (WorldPlan::hosts order).
struct AgentTreePlan {
  int width = 0;                  ///< at most this many roots, and children per node
  std::vector<int> parent;        ///< per host: its parent's index, -1 for a root
  std::vector<int> depth;         ///< per host: 0 for a root
  std::vector<size_t> subtreeEnd; ///< per host: one past the last host of its subtree

  size_t size() const { return parent.size(); }
  /// Levels below dsrun: 1 for a star-shaped tree of roots only, 0 for no host.
  int levels() const;
  std::vector<size_t> roots() const;
  std::vector<size_t> children(size_t host) const;
  /// Of the hosts in `lost` (per host: lost or not), those whose parent is not lost: the hosts that failed
  /// themselves, not as a subtree cut off with its lost ancestor (an elastic job re-forms without these only).
  std::vector<size_t> lostThemselves(const std::vector<bool>& lost) const;
};

/// The tree of `hostCount` hosts for --tree_width `width` (>= 2).
AgentTreePlan planAgentTree(size_t hostCount, int width);

}  // namespace dsrun::launcher
