#include "launcher/backends/agent/agent_tree_probe.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "common/error.h"
#include "common/logging.h"
#include "common/strings.h"
#include "launcher/backends/agent/agent_job.h"
#include "launcher/backends/agent/agent_mesh_plan.h"
#include "launcher/backends/agent/agent_mesh_probe.h"

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

std::optional<int> AgentJob::probeTree() {
  const auto started = std::chrono::steady_clock::now();
  probing_ = true;
  size_t waiting = 0;
  std::vector<std::string> order;
  for (const auto& node : nodes_) order.push_back(node->host);
  for (auto& [index, launch] : rootLaunches_) {
    Node& root = *nodes_[index];
    if (!root.client->agentProbesTree()) {
      // It would start its ranks on receipt: its subtree gets the plain launch at start, only probed by others.
      DSRUN_LOG(INFO) << "mesh probe: " << root.host << "'s agent predates the tree probe; its subtree of "
                      << subtreeEnd_[index] - index << " host(s) is only probed";
      continue;
    }
    wire::Envelope probed = launch;
    probed.mutable_tree_launch()->mutable_probe()->set_timeout_ms(
        static_cast<uint32_t>(settings_.meshProbeTimeout.count()));
    root.client->send(probed);
    wire::Envelope go;
    go.mutable_tree_go()->set_job_id(plan_.jobId);
    root.channel->setLaunch(std::move(go));  // what the driver's start() sends instead of the launch
    probeWaiting_.insert(index);
    ++waiting;
  }
  // Every level may take a whole connect timeout to give a child up, then the probe itself; a second for the
  // reports to climb.
  const auto deadline = started + settings_.connectTimeout * static_cast<int>(tree_->levels()) +
                        settings_.meshProbeTimeout + std::chrono::seconds(1);
  while (!probeWaiting_.empty() && firstSignal() == 0) {
    if (io_.run_one_until(deadline) == 0 && std::chrono::steady_clock::now() >= deadline) break;
  }
  probing_ = false;
  if (firstSignal() != 0) return nothingStarted("during the mesh probe");
  const auto tookMs =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  for (size_t index : probeWaiting_) {
    probeLost_.emplace(nodes_[index]->host, strCat("agent ", nodes_[index]->client->address(),
                                                   ": no mesh probe report within ", tookMs, " ms"));
  }
  const TreeProbeVerdict v = treeProbeVerdict(probeReports_, probeLost_, order);
  if (!v.lost.empty()) {
    closeAll();
    if (settings_.elasticRound) return roundEndedUnstarted(Outcome::End::Unreachable, v.lost, v.lostHosts);
    throw Error(strCat("cannot start the job, nothing was started: ", join(v.lost, "; "),
                       "\n  hint: start 'dsrun-agent --listen ADDR:", settings_.port,
                       " --tls_dir NODEDIR' on every host, NODEDIR made for it by 'dsrun --make_node_cert' from "
                       "--tls_dir"));
  }
  if (v.brokenCount > 0) {
    closeAll();  // the held launches end with their connections: nothing was started anywhere
    if (settings_.elasticRound) {
      return roundEndedUnstarted(Outcome::End::Partitioned, v.broken, meshSuspects(v.pairs, order));
    }
    throw ConfigError(strCat("mesh probe: ", v.broken.front(),
                             v.brokenCount > 1 ? strCat(" (and ", v.brokenCount - 1, " more)") : "",
                             "; nothing was started\n  hint: every host must reach every other on the network the "
                             "ranks use; check routes and firewalls, or pass --no_mesh_probe to launch anyway"));
  }
  // The star's wording (bench/agent_scale.py reads it), then where it ran.
  DSRUN_LOG(DEBUG) << "mesh probe: " << v.probedPairs << " pairs of " << nodes_.size() << " agents connected in "
                   << tookMs << " ms through the tree (slowest connect " << v.slowestMicros << " us"
                   << (v.unprobedNodes > 0 ? strCat(", ", v.unprobedNodes, " older agents only probed") : "") << ")";
  return std::nullopt;
}

void AgentJob::onTreeProbeReport(size_t rootIndex, const wire::TreeProbeReport& report) {
  if (!probing_ || report.job_id() != plan_.jobId || probeWaiting_.erase(rootIndex) == 0) return;
  probeReports_.push_back(report);
}

void AgentJob::onProbeLost(size_t nodeIndex, const std::string& reason) {
  probeLost_.emplace(nodes_[nodeIndex]->host, reason);
  // A root that is gone will not report; a lost node below it is in its report's subtree, which still comes.
  probeWaiting_.erase(nodeIndex);
}

}  // namespace dsrun::launcher
