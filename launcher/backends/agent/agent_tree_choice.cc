#include "launcher/backends/agent/agent_tree_choice.h"

#include "common/strings.h"
#include "launcher/options.h"

namespace dsrun::launcher {

AgentTreeChoice chooseAgentTree(int requested, size_t hosts) {
  if (requested == 0) return {0, "--tree_width 0: dsrun dials every agent (the star)"};
  if (requested > 0) return {requested, strCat("--tree_width ", requested)};
  if (hosts <= kAutoTreeAboveHosts) {
    return {0, strCat("--tree_width auto: ", hosts, " host", hosts == 1 ? "" : "s", ", at most ",
                      kAutoTreeAboveHosts, ": dsrun dials every agent (the star)")};
  }
  return {kAutoTreeWidth, strCat("--tree_width auto: ", hosts, " hosts, more than ", kAutoTreeAboveHosts,
                                 ": a tree of width ", kAutoTreeWidth, " (--tree_width 0 keeps the star)")};
}

}  // namespace dsrun::launcher
