#pragma once
// An agent's half of a tree launch: a received TreeLaunch -> (a) the LaunchRequest a star launch would have
// sent this node, byte for byte, and (b) the TreeLaunch of each child's subtree. Reading it also recomputes
// the root its signature must cover; whether the signature holds is tls/tree_signature.h's to say, whether
// this node may accept it from this peer is tree_acceptance.h's.

#include <cstdint>
#include <string>
#include <vector>

#include "proto/agent.pb.h"
#include "proto/tree_digest.h"

namespace dsrun::proto {

/// A received TreeLaunch, parsed and consistent with itself.
struct ReceivedTreeLaunch {
  wire::TreeLaunchHeader header;
  std::vector<wire::TreeNodePart> parts;  ///< the subtree in pre-order; parts[0] is this node's
  std::vector<int> parents;               ///< TreeNode.parent of each
  std::vector<size_t> subtreeEnds;        ///< treeSubtreeEnds(parents)
  std::vector<std::string> partHashes;    ///< treePartHash of each part
  std::vector<std::string> digests;       ///< treeDigests
  std::string root;                       ///< the root the proof leads to: the signature must be over
                                          ///< treeSignedMessage(root)
};

/// Parses and checks `launch`'s structure: header and parts parse, the subtree is in pre-order with only
/// node 0 lacking a parent, each node's ancestors are its parent's host followed by its parent's ancestors
/// (node 0's are the launch's word, checked by checkTreeLaunchFor), and the proof leads to a root. Throws
/// dsrun::Error saying what is wrong; nothing of a launch that throws may be started or forwarded.
ReceivedTreeLaunch readTreeLaunch(const wire::TreeLaunch& launch, const Sha256& sha256);

/// This node's ranks as a LaunchRequest: byte for byte what a star launch sends it. Throws dsrun::Error
/// when a RankDelta does not fit the template.
wire::LaunchRequest ownLaunchRequest(const ReceivedTreeLaunch& received);

/// One child's subtree: where to dial it, and what to send it.
struct ChildTreeLaunch {
  std::string host;     ///< the name its certificate must carry
  std::string address;  ///< where to dial it
  uint32_t port = 0;
  wire::TreeLaunch launch;
};

/// The launch of each child of this node, in order: the child's slice of the subtree, the header, signature
/// and certificate as received, and the received proof plus this node's level.
std::vector<ChildTreeLaunch> childTreeLaunches(const wire::TreeLaunch& launch, const ReceivedTreeLaunch& received);

}  // namespace dsrun::proto
