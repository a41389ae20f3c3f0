#pragma once
// dsrun's half of a tree launch: the LaunchRequest a star launch would send each node -> one compact
// TreeLaunch per root (the header once, per node only its RankDeltas), hashed so that it is signed once.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "proto/agent.pb.h"
#include "proto/tree_digest.h"

namespace dsrun::proto {

/// One node of the launch as dsrun planned it, in pre-order of the tree (launcher/backends/agent's tree plan).
struct TreeLaunchNode {
  std::string host;             ///< the name in its agent's certificate (what its parent verifies)
  std::string address;          ///< where its parent dials it
  uint32_t port = 0;            ///< its agent's port
  int parent = -1;              ///< index of its parent in the list (an earlier node); -1: a root
  wire::LaunchRequest request;  ///< exactly what a star launch sends this node
  std::vector<std::string> probeTargets;  ///< "host:port" it probes before a probed launch starts (may be empty)
};

/// The job-wide fields of TreeLaunchHeader that are not in the LaunchRequests.
struct TreeLaunchStamp {
  int64_t issuedUnixUs = 0;  ///< dsrun's wall clock when it signs
  uint32_t validForS = 0;    ///< how long (either way) an agent accepts the launch and remembers its job id
  uint32_t treeWidth = 0;    ///< the width planned with (informational)
  std::string launcher;      ///< who signs, for the agents' logs
};

/// A launch's content, serialized and hashed once: what dsrun signs (treeSignedMessage(root)) and slices per root.
struct TreeLaunchContent {
  std::string header;                   ///< a serialized TreeLaunchHeader
  std::vector<std::string> parts;       ///< serialized TreeNodeParts, in the nodes' order
  std::vector<int> parents;             ///< TreeLaunchNode::parent of each
  std::vector<size_t> subtreeEnds;      ///< treeSubtreeEnds(parents)
  std::vector<std::string> digests;     ///< treeDigests of the parts
  std::string root;                     ///< treeRoot over the header and the roots' digests
};

/// Node `index`'s LaunchRequest: made into `scratch` (one message per building thread, cleared and refilled so
/// that protobuf reuses its strings) and returned, or returned from where it is already held.
using TreeRequestSource = std::function<const wire::LaunchRequest&(size_t index, wire::LaunchRequest& scratch)>;

/// Builds the content. The template RankLaunch is the first rank of the first node that has one; every rank
/// is stored as its rankDelta against it. DSRUN_CHECKs that the nodes form a forest in pre-order and that every
/// request has the same job id, log settings, kill grace and progress interval (dsrun made them all).
TreeLaunchContent buildTreeLaunch(const std::vector<TreeLaunchNode>& nodes, const TreeLaunchStamp& stamp,
                                  const Sha256& sha256);

/// The same, each node's request taken from `request` (nodes[i].request is not read) and the nodes' parts
/// made and hashed on `threads` threads (contiguous slices of the nodes; `sha256` must be thread-safe). At
/// 10,000 nodes x 8 ranks, holding every node's full request at once cost dsrun more (allocation) than the
/// rest of the launch, and the parts are independent until the digests; the content is the same bytes
/// whatever the thread count.
TreeLaunchContent buildTreeLaunch(const std::vector<TreeLaunchNode>& nodes, const TreeRequestSource& request,
                                  const TreeLaunchStamp& stamp, const Sha256& sha256, unsigned threads);

/// The TreeLaunch dsrun sends the root at index `root` (a node without a parent): its subtree and the proof
/// level of the roots, with `signature` (over treeSignedMessage(content.root)) and the signer's DER certificate.
wire::TreeLaunch rootTreeLaunch(const TreeLaunchContent& content, size_t root, const std::string& signature,
                                const std::string& launcherCertificate);

}  // namespace dsrun::proto
