#include "launcher/backends/agent/agent_tree_probe.h"

#include <algorithm>

#include "common/strings.h"
#include "launcher/backends/agent/agent_mesh_plan.h"

namespace dsrun::launcher {
namespace {

size_t positionOf(const std::vector<std::string>& order, const std::string& host) {
  return static_cast<size_t>(std::find(order.begin(), order.end(), host) - order.begin());
}

std::string hostOf(const std::string& target) { return target.substr(0, target.rfind(':')); }

}  // namespace

TreeProbeVerdict treeProbeVerdict(const std::vector<wire::TreeProbeReport>& reports,
                                  const std::map<std::string, std::string>& lost,
                                  const std::vector<std::string>& order) {
  TreeProbeVerdict v;
  std::vector<const wire::TreeProbeBroken*> broken;
  for (const wire::TreeProbeReport& r : reports) {
    v.brokenCount += r.broken_count();
    v.probedPairs += r.pairs();
    v.slowestMicros = std::max(v.slowestMicros, r.slowest_micros());
    v.unprobedNodes += r.unprobed_nodes();
    for (const wire::TreeProbeBroken& b : r.broken()) broken.push_back(&b);
  }
  // Each report is in its subtree's pre-order already; the roots' reports arrive in any order.
  std::stable_sort(broken.begin(), broken.end(), [&order](const auto* a, const auto* b) {
    return positionOf(order, a->from()) < positionOf(order, b->from());
  });
  for (const wire::TreeProbeBroken* b : broken) {
    v.broken.push_back(strCat(b->from(), " cannot reach ", b->target(), ": ", b->error()));
    v.pairs.emplace_back(b->from(), hostOf(b->target()));
  }
  for (const auto& [host, line] : lost) v.lostHosts.push_back(host);
  std::sort(v.lostHosts.begin(), v.lostHosts.end(), [&order](const std::string& a, const std::string& b) {
    return positionOf(order, a) < positionOf(order, b);
  });
  for (const std::string& host : v.lostHosts) v.lost.push_back(lost.at(host));
  return v;
}

std::vector<std::vector<std::string>> treeProbeTargets(const std::vector<std::string>& hosts, int agentPort) {
  std::vector<std::vector<std::string>> out(hosts.size());
  for (size_t i = 0; i < hosts.size(); ++i) {
    for (size_t j : meshProbePeers(i, hosts.size())) out[i].push_back(strCat(hosts[j], ":", agentPort));
  }
  return out;
}

}  // namespace dsrun::launcher
