#pragma once
// chooseAgentTree: the shape of an agent launch (--tree_width; docs/agent.md "Tree launch"). "auto", the
// default, launches through a tree above kAutoTreeAboveHosts hosts and dials every agent (the star) up to
// there (elastic rounds too: each round's world is launched and probed through the tree as any job is);
// a width given on the command line is used as given (0: the star). The numbers come from the
// measurements in docs/benchmarks.md "Launch at scale" (real agents to 1,000 nodes, the validated simulation
// to 10,000). Pure.

#include <cstddef>
#include <string>

namespace dsrun::launcher {

/// Up to this many hosts "auto" keeps the star: there the tree launched no faster on real agents and the
/// star's mesh probe still checks every pair.
constexpr size_t kAutoTreeAboveHosts = 16;
/// The width "auto" takes above kAutoTreeAboveHosts.
constexpr int kAutoTreeWidth = 8;

struct AgentTreeChoice {
  int width = 0;    ///< 0: the star; otherwise the tree's width
  std::string why;  ///< one line for the log and the dry run
};

/// `requested`: Options::treeWidth (kTreeWidthAuto, 0, or a width >= 2); `hosts`: the plan's hosts (an elastic
/// job's: each round's world, which may grow past kAutoTreeAboveHosts or shrink below it).
AgentTreeChoice chooseAgentTree(int requested, size_t hosts);

}  // namespace dsrun::launcher
