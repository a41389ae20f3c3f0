#include "launcher/backends/agent/agent_tree_launch.h"

#include <google/protobuf/io/coded_stream.h>

#include "common/error.h"
#include "proto/tree_digest.h"
#include "proto/tree_subtree.h"

namespace dsrun::launcher {

void requireTreeLaunch(const wire::Welcome& welcome, const std::string& host, int port) {
  if (welcome.tree_launch()) return;
  throw ConfigError(strCat("agent ", host, ":", port, " does not serve tree launches (an older dsrun-agent); nothing "
                           "was started\n  hint: run the same dsrun release on every host (dsrun --version), or "
                           "pass --tree_width 0 to launch with dsrun dialling every agent"));
}

namespace {

/// Signs `content` once and slices it per root, checking each root's frame against `maxFrameBytes`.
std::vector<RootTreeLaunch> signAndSlice(const proto::TreeLaunchContent& content,
                                         const std::vector<proto::TreeLaunchNode>& nodes,
                                         const proto::TreeLaunchStamp& stamp, const tls::TreeSigner& signer,
                                         size_t maxFrameBytes) {
  // The launch's one private-key operation, however many nodes it has.
  const std::string signature = signer.sign(proto::treeSignedMessage(content.root));
  std::vector<RootTreeLaunch> out;
  for (size_t root : proto::treeRoots(content.subtreeEnds)) {
    out.push_back({root, proto::rootTreeLaunch(content, root, signature, signer.certificateDer())});
    // As a frame: the Envelope's tag for field 50 (2 bytes) and the length in front of the launch.
    const size_t launchBytes = out.back().launch.ByteSizeLong();
    const size_t bytes = 2 + google::protobuf::io::CodedOutputStream::VarintSize64(launchBytes) + launchBytes;
    if (bytes > maxFrameBytes) {
      throw ConfigError(strCat("--tree_width ", stamp.treeWidth, ": the launch for ", nodes[root].host, " and the ",
                               content.subtreeEnds[root] - root - 1, " hosts below it is ", bytes,
                               " bytes, over the agents' frame limit of ", maxFrameBytes,
                               " bytes; nothing was started\n  hint: a wider tree gives each root fewer hosts: "
                               "raise --tree_width"));
    }
  }
  return out;
}

const proto::Sha256 kSha256 = [](std::string_view data) { return tls::sha256(data); };

}  // namespace

std::vector<proto::TreeLaunchNode> treeLaunchShape(const WorldPlan& plan, const AgentTreePlan& tree, int port) {
  DSRUN_CHECK_EQ(tree.size(), plan.hosts.size(), "tree vs plan hosts");
  std::vector<proto::TreeLaunchNode> nodes(plan.hosts.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    nodes[i].host = plan.hosts[i].host;
    nodes[i].address = plan.hosts[i].host;
    nodes[i].port = static_cast<uint32_t>(port);
    nodes[i].parent = tree.parent[i];
  }
  return nodes;
}

std::vector<proto::TreeLaunchNode> treeLaunchNodes(const WorldPlan& plan, const AgentTreePlan& tree, int port,
                                                   const NodeLaunchSettings& settings) {
  std::vector<proto::TreeLaunchNode> nodes = treeLaunchShape(plan, tree, port);
  std::vector<wire::LaunchRequest> requests = nodeLaunchRequests(plan, settings);
  for (size_t i = 0; i < nodes.size(); ++i) nodes[i].request = std::move(requests[i]);
  return nodes;
}

std::vector<RootTreeLaunch> signedTreeLaunches(const std::vector<proto::TreeLaunchNode>& nodes,
                                               const proto::TreeLaunchStamp& stamp, const tls::TreeSigner& signer,
                                               size_t maxFrameBytes) {
  return signAndSlice(proto::buildTreeLaunch(nodes, stamp, kSha256), nodes, stamp, signer, maxFrameBytes);
}

std::vector<RootTreeLaunch> signedTreeLaunches(const WorldPlan& plan, const std::vector<proto::TreeLaunchNode>& shape,
                                               const NodeLaunchSettings& settings,
                                               const proto::TreeLaunchStamp& stamp, const tls::TreeSigner& signer,
                                               unsigned threads, size_t maxFrameBytes) {
  const std::vector<std::vector<const PlannedRank*>> ranks = ranksByNode(plan);
  auto request = [&](size_t i, wire::LaunchRequest& scratch) -> const wire::LaunchRequest& {
    fillNodeLaunchRequest(plan, ranks[i], settings, scratch);
    return scratch;
  };
  return signAndSlice(proto::buildTreeLaunch(shape, request, stamp, kSha256, threads), shape, stamp, signer,
                      maxFrameBytes);
}

}  // namespace dsrun::launcher
