#include "launcher/backends/agent/agent_tree_build.h"

#include <algorithm>
#include <memory>
#include <thread>

#include "launcher/backends/agent/agent_tree_probe.h"
#include "tls/tree_signature.h"

namespace dsrun::launcher {

TreeLaunchBuild::TreeLaunchBuild(const WorldPlan& plan, const AgentTreePlan& tree, int port,
                                 const NodeLaunchSettings& settings, const std::string& tlsDir,
                                 const proto::TreeLaunchStamp& stamp, bool probeTargets) {
  auto signer = std::make_shared<const tls::TreeSigner>(tlsDir);
  result_ = std::async(std::launch::async, [&plan, &tree, port, settings, stamp, probeTargets, signer] {
    std::vector<proto::TreeLaunchNode> shape = treeLaunchShape(plan, tree, port);
    if (probeTargets) {
      // Signed with each node's part: which agents it probes.
      std::vector<std::string> hosts;
      for (const auto& node : shape) hosts.push_back(node.host);
      std::vector<std::vector<std::string>> targets = treeProbeTargets(hosts, port);
      for (size_t i = 0; i < shape.size(); ++i) shape[i].probeTargets = std::move(targets[i]);
    }
    return signedTreeLaunches(plan, shape, settings, stamp, *signer, threadsFor(shape.size()));
  });
}

TreeLaunchBuild::~TreeLaunchBuild() {
  if (result_.valid()) result_.wait();
}

std::vector<RootTreeLaunch> TreeLaunchBuild::take() { return result_.get(); }

unsigned TreeLaunchBuild::threadsFor(size_t nodes) {
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::clamp<size_t>(nodes / 64, 1, cores));
}

}  // namespace dsrun::launcher
