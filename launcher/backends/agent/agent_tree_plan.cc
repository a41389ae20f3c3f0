#include "launcher/backends/agent/agent_tree_plan.h"

#include <algorithm>

#include "common/error.h"

namespace dsrun::launcher {
namespace {

/// Hangs [begin, end) below `parent` (-1: dsrun) as at most `width` spans, each headed by its first host.
void split(AgentTreePlan& tree, size_t begin, size_t end, int parent, int depth) {
  const size_t count = end - begin;
  if (count == 0) return;
  const size_t spans = std::min(count, static_cast<size_t>(tree.width));
  // The first count % spans spans get one host more, so that sizes differ by at most one.
  size_t at = begin;
  for (size_t s = 0; s < spans; ++s) {
    const size_t size = count / spans + (s < count % spans ? 1 : 0);
    tree.parent[at] = parent;
    tree.depth[at] = depth;
    tree.subtreeEnd[at] = at + size;
    split(tree, at + 1, at + size, static_cast<int>(at), depth + 1);
    at += size;
  }
}

}  // namespace

int AgentTreePlan::levels() const {
  return depth.empty() ? 0 : *std::max_element(depth.begin(), depth.end()) + 1;
}

std::vector<size_t> AgentTreePlan::roots() const {
  std::vector<size_t> out;
  for (size_t r = 0; r < size(); r = subtreeEnd[r]) out.push_back(r);
  return out;
}

std::vector<size_t> AgentTreePlan::children(size_t host) const {
  std::vector<size_t> out;
  for (size_t c = host + 1; c < subtreeEnd[host]; c = subtreeEnd[c]) out.push_back(c);
  return out;
}

AgentTreePlan planAgentTree(size_t hostCount, int width) {
  DSRUN_CHECK(width >= 2, "tree width ", width);
  AgentTreePlan tree;
  tree.width = width;
  tree.parent.assign(hostCount, -1);
  tree.depth.assign(hostCount, 0);
  tree.subtreeEnd.assign(hostCount, 0);
  split(tree, 0, hostCount, -1, 0);
  return tree;
}

std::vector<size_t> AgentTreePlan::lostThemselves(const std::vector<bool>& lost) const {
  DSRUN_CHECK_EQ(lost.size(), size(), "lost flags per host");
  std::vector<size_t> out;
  for (size_t i = 0; i < size(); ++i) {
    if (lost[i] && (parent[i] < 0 || !lost[static_cast<size_t>(parent[i])])) out.push_back(i);
  }
  return out;
}

}  // namespace dsrun::launcher
