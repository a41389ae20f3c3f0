#include "launcher/backends/agent/agent_tree_listing.h"

#include <climits>

#include "common/error.h"

namespace dsrun::launcher {
namespace {

/// The lowest and highest rank of each host (INT_MAX/INT_MIN for a host without ranks), in one pass.
struct RankSpan {
  int low = INT_MAX;
  int high = INT_MIN;
  void add(const RankSpan& o) {
    low = std::min(low, o.low);
    high = std::max(high, o.high);
  }
  std::string text() const {
    if (low > high) return "no ranks";
    return low == high ? strCat("rank ", low) : strCat("ranks ", low, "-", high);
  }
};

/// The deepest level such that listing every host down to it takes at most maxLines (at least the roots).
int deepestListedLevel(const AgentTreePlan& tree, size_t maxLines) {
  std::vector<size_t> perLevel(static_cast<size_t>(tree.levels()), 0);
  for (int d : tree.depth) ++perLevel[static_cast<size_t>(d)];
  size_t lines = 0;
  int level = 0;
  for (; level < tree.levels(); ++level) {
    lines += perLevel[static_cast<size_t>(level)];
    if (lines > maxLines) break;
  }
  return std::max(level - 1, 0);
}

}  // namespace

std::vector<std::string> agentTreeListing(const AgentTreePlan& tree, const WorldPlan& plan, size_t maxLines) {
  DSRUN_CHECK_EQ(tree.size(), plan.hosts.size(), "tree vs plan hosts");
  std::vector<RankSpan> own(tree.size());
  for (const PlannedRank& r : plan.ranks) own[static_cast<size_t>(r.nodeRank)].add({r.rank, r.rank});
  // Subtrees are contiguous and in pre-order: walking backwards folds each host into its parent.
  std::vector<RankSpan> below(tree.size());
  for (size_t i = tree.size(); i-- > 0;) {
    if (tree.parent[i] >= 0) {
      below[static_cast<size_t>(tree.parent[i])].add(own[i]);
      below[static_cast<size_t>(tree.parent[i])].add(below[i]);
    }
  }
  const int last = deepestListedLevel(tree, maxLines);
  std::vector<std::string> lines;
  for (size_t i = 0; i < tree.size(); ++i) {
    if (tree.depth[i] > last) continue;
    std::string line = strCat(std::string(2 * static_cast<size_t>(tree.depth[i]), ' '), plan.hosts[i].host, " (",
                              own[i].text(), ")");
    const size_t hidden = tree.subtreeEnd[i] - i - 1;
    if (tree.depth[i] == last && hidden > 0) {
      const std::string& first = plan.hosts[i + 1].host;
      line += hidden == 1 ? strCat(" + 1 below: ", first, ", ", below[i].text())
                          : strCat(" + ", hidden, " below: ", first, " .. ", plan.hosts[tree.subtreeEnd[i] - 1].host, ", ",
                                   below[i].text());
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace dsrun::launcher
