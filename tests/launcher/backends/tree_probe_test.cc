#include "launcher/backends/agent/agent_tree_probe.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "common/strings.h"
#include "launcher/backends/agent/agent_mesh_plan.h"
#include "launcher/backends/agent/agent_tree_plan.h"

using dsrun::strCat;
using dsrun::launcher::meshProbePeers;
using dsrun::launcher::treeProbeTargets;
using dsrun::launcher::treeProbeVerdict;

namespace {

std::vector<std::string> hostNames(size_t count) {
  std::vector<std::string> hosts;
  for (size_t i = 0; i < count; ++i) hosts.push_back(strCat("node", i));
  return hosts;
}

dsrun::wire::TreeProbeReport report(std::vector<std::pair<std::string, std::string>> broken, uint64_t pairs) {
  dsrun::wire::TreeProbeReport r;
  r.set_job_id("job");
  for (const auto& [from, target] : broken) {
    auto* b = r.add_broken();
    b->set_from(from);
    b->set_target(target);
    b->set_error("No route to host");
  }
  r.set_broken_count(broken.size());
  r.set_pairs(pairs);
  return r;
}

}  // namespace

TEST_CASE("tree probe targets are the star's structured set, named host:port, bounded per node",
          "[launcher][agent][tree][probe]") {
  const size_t count = GENERATE(2, 5, 16, 17, 64, 1000);
  CAPTURE(count);
  const auto hosts = hostNames(count);
  const auto targets = treeProbeTargets(hosts, 29600);
  REQUIRE(targets.size() == count);
  size_t bits = 0;
  while ((size_t{1} << bits) < count) ++bits;
  const size_t bound = count <= dsrun::launcher::kMeshAllPairsUpTo ? count - 1 : bits + 1;
  for (size_t i = 0; i < count; ++i) {
    CAPTURE(i);
    CHECK(targets[i].size() <= bound);
    std::vector<std::string> expected;
    for (size_t j : meshProbePeers(i, count)) expected.push_back(strCat("node", j, ":29600"));
    CHECK(targets[i] == expected);
  }
}

TEST_CASE("a tree probe verdict lists broken pairs in host order whatever order the roots reported in",
          "[launcher][agent][tree][probe]") {
  const auto order = hostNames(4);
  // The second root (node2) reported first.
  const auto v = treeProbeVerdict({report({{"node3", "node0:29600"}}, 6), report({{"node1", "node3:29600"}}, 6)},
                                  {}, order);
  REQUIRE(v.broken.size() == 2);
  CHECK(v.broken[0] == "node1 cannot reach node3:29600: No route to host");
  CHECK(v.broken[1] == "node3 cannot reach node0:29600: No route to host");
  CHECK(v.brokenCount == 2);
  CHECK(v.probedPairs == 12);
  REQUIRE(v.pairs.size() == 2);
  CHECK(v.pairs[0] == std::make_pair(std::string("node1"), std::string("node3")));
  CHECK(v.lost.empty());
}

TEST_CASE("a tree probe verdict names the nodes lost while probing in host order, each alone",
          "[launcher][agent][tree][probe]") {
  const auto order = hostNames(5);
  const auto v = treeProbeVerdict({report({}, 4)},
                                  {{"node4", "agent node4 (via node3): connect: Connection refused"},
                                   {"node1", "agent node1 (via node0): silent"}},
                                  order);
  CHECK(v.lostHosts == std::vector<std::string>{"node1", "node4"});
  REQUIRE(v.lost.size() == 2);
  CHECK(v.lost[0] == "agent node1 (via node0): silent");
  CHECK(v.brokenCount == 0);
}

TEST_CASE("a tree probe verdict counts what the reports could not list", "[launcher][agent][tree][probe]") {
  auto r = report({{"node0", "node1:29600"}}, 100);
  r.set_broken_count(70);
  r.set_unprobed_nodes(3);
  const auto v = treeProbeVerdict({r}, {}, hostNames(2));
  CHECK(v.broken.size() == 1);
  CHECK(v.brokenCount == 70);
  CHECK(v.unprobedNodes == 3);
}

TEST_CASE("a lost node's subtree is not lost itself: only the topmost lost hosts are", "[launcher][agent][tree]") {
  // width 2 over 7 hosts: 0 (1 (2), 3), 4 (5, 6) -- checked against the plan's parents first.
  const auto tree = dsrun::launcher::planAgentTree(7, 2);
  REQUIRE(tree.parent == std::vector<int>{-1, 0, 1, 0, -1, 4, 4});
  using Lost = std::vector<bool>;
  CHECK(tree.lostThemselves(Lost{false, true, true, false, false, false, false}) == std::vector<size_t>{1});
  CHECK(tree.lostThemselves(Lost{true, true, true, true, false, true, false}) == std::vector<size_t>{0, 5});
  CHECK(tree.lostThemselves(Lost{false, false, true, false, false, false, true}) == std::vector<size_t>{2, 6});
  CHECK(tree.lostThemselves(Lost(7, false)).empty());
}
