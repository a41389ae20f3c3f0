// AgentJob::assembleTree: a tree launch is assembled before anything starts (docs/agent.md "The tree is
// assembled before it starts"). Each root gets its signed TreeLaunch with `probe`: every node holds its ranks,
// forwards the launch to its children (held there too), probes the targets its own signed part names (none
// with --no_mesh_probe), and reports up once its children have; dsrun sends TreeGo down only when every root
// reported and no node was lost. Unheld, every agent forwarded and forked while the handshakes further down
// were still under way: at 1,000 agents x 8 ranks on 2 cores the 8,000 spawns starved those handshakes (0 of 8
// jobs passed, docs/benchmarks.md "Launch at scale"), and a node found unreachable in one subtree was found
// after ranks of another had started, where the star starts nothing unless every agent welcomed it.
// Split from agent_tree_probe.cc, which keeps the probe's pure verdict and targets.
#include <chrono>

#include "common/error.h"
#include "common/logging.h"
#include "common/strings.h"
#include "launcher/backends/agent/agent_job.h"
#include "launcher/backends/agent/agent_mesh_probe.h"
#include "launcher/backends/agent/agent_port_preflight.h"
#include "launcher/backends/agent/agent_tree_probe.h"

namespace dsrun::launcher {

std::optional<int> AgentJob::assembleTree(bool probe) {
  const auto started = std::chrono::steady_clock::now();
  assembling_ = true;
  std::vector<std::string> order;
  for (const auto& node : nodes_) order.push_back(node->host);
  for (auto& [index, launch] : rootLaunches_) {
    Node& root = *nodes_[index];
    if (!root.client->agentProbesTree()) {
      // It would start its ranks on receipt: its subtree gets the plain launch at start, as before the held
      // launch existed (only probed by the others when probing).
      if (probe) {
        DSRUN_LOG(INFO) << "mesh probe: " << root.host << "'s agent predates the tree probe; its subtree of "
                        << subtreeEnd_[index] - index << " host(s) is only probed";
      } else {
        DSRUN_LOG(INFO) << "tree assembly: " << root.host << "'s agent predates the held tree launch; its subtree of "
                        << subtreeEnd_[index] - index << " host(s) starts on receipt of its launch";
      }
      continue;
    }
    // Without the probe the nodes' parts name no targets, so each node reports as soon as its children have;
    // the per-target timeout still goes along: a parent's wait for a held child's report counts it per level
    // (agent/child_link.cc), and the probed launch that passed at 1,000 agents had those budgets.
    wire::Envelope held = launch;
    held.mutable_tree_launch()->mutable_probe()->set_timeout_ms(
        static_cast<uint32_t>(settings_.meshProbeTimeout.count()));
    root.client->send(held);
    wire::Envelope go;
    go.mutable_tree_go()->set_job_id(plan_.jobId);
    root.channel->setLaunch(std::move(go));  // what the driver's start() sends instead of the launch
    probeWaiting_.insert(index);
  }
  const size_t held = probeWaiting_.size();  // roots whose subtree is held (the others predate it)
  // Every level may take a whole connect timeout to give a child up, then the probe's (a child's report may
  // wait that long per level below it, even with no targets); a second for the reports to climb.
  const auto deadline = started + settings_.connectTimeout * static_cast<int>(tree_->levels()) +
                        settings_.meshProbeTimeout + std::chrono::seconds(1);
  while (!probeWaiting_.empty() && firstSignal() == 0) {
    if (io_.run_one_until(deadline) == 0 && std::chrono::steady_clock::now() >= deadline) break;
  }
  assembling_ = false;
  if (firstSignal() != 0) return nothingStarted(probe ? "during the mesh probe" : "while the tree was assembled");
  const auto tookMs =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  for (size_t index : probeWaiting_) {
    probeLost_.emplace(nodes_[index]->host,
                       strCat("agent ", nodes_[index]->client->address(), ": no ", probe ? "mesh probe" : "assembly",
                              " report for its subtree of ", subtreeEnd_[index] - index, " host(s) within ", tookMs,
                              " ms"));
  }
  const TreeProbeVerdict v = treeProbeVerdict(probeReports_, probeLost_, order);
  if (!v.lost.empty()) {
    closeAll();  // the held launches end with their connections: nothing was started anywhere
    if (settings_.elasticRound) return roundEndedUnstarted(Outcome::End::Unreachable, v.lost, v.lostHosts);
    throw Error(strCat("cannot start the job, nothing was started: ", join(v.lost, "; "),
                       startAgentHint(settings_.port)));
  }
  if (v.brokenCount > 0) {
    closeAll();
    if (settings_.elasticRound) {
      return roundEndedUnstarted(Outcome::End::Partitioned, v.broken, meshSuspects(v.pairs, order));
    }
    throw ConfigError(strCat("mesh probe: ", v.broken.front(),
                             v.brokenCount > 1 ? strCat(" (and ", v.brokenCount - 1, " more)") : "",
                             "; nothing was started\n  hint: every host must reach every other on the network the "
                             "ranks use; check routes and firewalls, or pass --no_mesh_probe to launch anyway"));
  }
  if (probe) {
    // The star's wording (bench/agent_scale.py reads it), then where it ran.
    DSRUN_LOG(DEBUG) << "mesh probe: " << v.probedPairs << " pairs of " << nodes_.size() << " agents connected in "
                     << tookMs << " ms through the tree (slowest connect " << v.slowestMicros << " us"
                     << (v.unprobedNodes > 0 ? strCat(", ", v.unprobedNodes, " older agents only probed") : "")
                     << ")";
  } else if (!rootLaunches_.empty() && held > 0) {
    // No pair was probed (--no_mesh_probe): only that every agent holds its launch (bench/agent_scale.py reads it).
    DSRUN_LOG(DEBUG) << "tree assembled: " << nodes_.size() << " agents hold their launch after " << tookMs
                     << " ms (no mesh probe: --no_mesh_probe"
                     << (v.unprobedNodes > 0 ? strCat("; ", v.unprobedNodes, " older agents get theirs at go") : "")
                     << ")";
  }
  return std::nullopt;
}

void AgentJob::onTreeProbeReport(size_t rootIndex, const wire::TreeProbeReport& report) {
  if (!assembling_ || report.job_id() != plan_.jobId || probeWaiting_.erase(rootIndex) == 0) return;
  probeReports_.push_back(report);
}

void AgentJob::onProbeLost(size_t nodeIndex, const std::string& reason) {
  probeLost_.emplace(nodes_[nodeIndex]->host, reason);
  // A root that is gone will not report; a lost node below it is in its report's subtree, which still comes.
  probeWaiting_.erase(nodeIndex);
}

}  // namespace dsrun::launcher
