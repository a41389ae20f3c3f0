#include "launcher/backends/agent/agent_tree_launch.h"

#include "common/error.h"
#include "proto/tree_digest.h"
#include "proto/tree_subtree.h"

namespace dsrun {

std::vector<proto::TreeLaunchNode> treeLaunchNodes(const WorldPlan& plan, const AgentTreePlan& tree, int port,
                                                   const NodeLaunchSettings& settings) {
  DSRUN_CHECK_EQ(tree.size(), plan.hosts.size(), "tree vs plan hosts");
  std::vector<wire::LaunchRequest> requests = nodeLaunchRequests(plan, settings);
  std::vector<proto::TreeLaunchNode> nodes(plan.hosts.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    nodes[i].host = plan.hosts[i].host;
    nodes[i].address = plan.hosts[i].host;
    nodes[i].port = static_cast<uint32_t>(port);
    nodes[i].parent = tree.parent[i];
    nodes[i].request = std::move(requests[i]);
  }
  return nodes;
}

std::vector<RootTreeLaunch> signedTreeLaunches(const std::vector<proto::TreeLaunchNode>& nodes,
                                               const proto::TreeLaunchStamp& stamp, const tls::TreeSigner& signer) {
  const proto::TreeLaunchContent content =
      proto::buildTreeLaunch(nodes, stamp, [](std::string_view data) { return tls::sha256(data); });
  // The launch's one private-key operation, however many nodes it has.
  const std::string signature = signer.sign(proto::treeSignedMessage(content.root));
  std::vector<RootTreeLaunch> out;
  for (size_t root : proto::treeRoots(content.subtreeEnds)) {
    out.push_back({root, proto::rootTreeLaunch(content, root, signature, signer.certificateDer())});
  }
  return out;
}

}  // namespace dsrun
