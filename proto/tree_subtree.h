#pragma once
// The shape of a tree launch's node list, shared by the builder (dsrun) and the expander (every agent): nodes
// in pre-order, each naming its parent by index, so that every subtree is one contiguous range of the list
// and a node forwards to a child exactly the slice that starts at the child.

#include <cstddef>
#include <string>
#include <vector>

#include "proto/agent.pb.h"

namespace dsrun::proto {

/// An empty string when `parents` describes a forest in pre-order (parents[i] is -1 or the index of a node on
/// the path from the last root to node i-1), else one line saying which node breaks it. `oneRoot`: only
/// node 0 may have no parent (a received subtree).
std::string treeOrderError(const std::vector<int>& parents, bool oneRoot);

/// For each node of a pre-order list, one past the last index of its subtree.
std::vector<size_t> treeSubtreeEnds(const std::vector<int>& parents);

/// The indexes of node `i`'s children, in order, from treeSubtreeEnds.
std::vector<size_t> treeChildren(const std::vector<size_t>& subtreeEnds, size_t i);

/// The indexes of the nodes without a parent (the roots of a forest), in order, from treeSubtreeEnds.
std::vector<size_t> treeRoots(const std::vector<size_t>& subtreeEnds);

/// The TreeLaunch of the subtree [begin, end) of a pre-order list: header, signature and certificate as
/// given, the parts with parent indexes rebased onto the slice (node `begin` gets -1), and `proof`.
wire::TreeLaunch treeSubtreeLaunch(const std::string& header, const std::string& signature,
                                   const std::string& launcherCertificate, const std::vector<std::string>& parts,
                                   const std::vector<int>& parents, size_t begin, size_t end,
                                   google::protobuf::RepeatedPtrField<wire::TreeProofLevel> proof);

/// The proof level a parent adds for child `child` among `children` (indexes into `digests`).
wire::TreeProofLevel treeProofLevel(const std::string& parentPartHash, const std::vector<size_t>& children,
                                    size_t child, const std::vector<std::string>& digests);

}  // namespace dsrun::proto
