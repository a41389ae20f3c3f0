#include "proto/tree_subtree.h"

#include <algorithm>

#include "common/error.h"

namespace dsrun::proto {

std::string treeOrderError(const std::vector<int>& parents, bool oneRoot) {
  // The path from the current root to the last node: a node's parent must be on it, and everything below
  // that parent on the path is closed for good (that is what pre-order means).
  std::vector<int> path;
  for (size_t i = 0; i < parents.size(); ++i) {
    const int p = parents[i];
    if (p == -1) {
      if (oneRoot && i != 0) return strCat("node ", i, " has no parent (only the receiver may lack one)");
      path.clear();
    } else {
      if (i == 0) return strCat("node 0 names parent ", p, " (the first node starts the subtree)");
      while (!path.empty() && path.back() != p) path.pop_back();
      if (path.empty()) return strCat("node ", i, " names parent ", p, ", which is not on the path to it");
    }
    path.push_back(static_cast<int>(i));
  }
  return {};
}

std::vector<size_t> treeSubtreeEnds(const std::vector<int>& parents) {
  std::vector<size_t> end(parents.size());
  for (size_t i = parents.size(); i-- > 0;) {
    end[i] = std::max(end[i], i + 1);
    if (parents[i] >= 0) {
      size_t& parentEnd = end[static_cast<size_t>(parents[i])];
      parentEnd = std::max(parentEnd, end[i]);
    }
  }
  return end;
}

std::vector<size_t> treeChildren(const std::vector<size_t>& subtreeEnds, size_t i) {
  std::vector<size_t> children;
  for (size_t c = i + 1; c < subtreeEnds[i]; c = subtreeEnds[c]) children.push_back(c);
  return children;
}

std::vector<size_t> treeRoots(const std::vector<size_t>& subtreeEnds) {
  std::vector<size_t> roots;
  for (size_t r = 0; r < subtreeEnds.size(); r = subtreeEnds[r]) roots.push_back(r);
  return roots;
}

wire::TreeLaunch treeSubtreeLaunch(const std::string& header, const std::string& signature,
                                   const std::string& launcherCertificate, const std::vector<std::string>& parts,
                                   const std::vector<int>& parents, size_t begin, size_t end,
                                   google::protobuf::RepeatedPtrField<wire::TreeProofLevel> proof) {
  DSRUN_CHECK(begin < end && end <= parts.size(), "subtree [", begin, ", ", end, ") of ", parts.size());
  wire::TreeLaunch launch;
  launch.set_header(header);
  launch.set_signature(signature);
  launch.set_launcher_certificate(launcherCertificate);
  launch.mutable_subtree()->Reserve(static_cast<int>(end - begin));
  for (size_t i = begin; i < end; ++i) {
    wire::TreeNode* node = launch.add_subtree();
    node->set_part(parts[i]);
    node->set_parent(i == begin ? -1 : parents[i] - static_cast<int>(begin));
  }
  *launch.mutable_proof() = std::move(proof);
  return launch;
}

wire::TreeProofLevel treeProofLevel(const std::string& parentPartHash, const std::vector<size_t>& children,
                                    size_t child, const std::vector<std::string>& digests) {
  wire::TreeProofLevel level;
  level.set_part_hash(parentPartHash);
  for (size_t k = 0; k < children.size(); ++k) {
    if (children[k] == child) {
      level.set_position(static_cast<uint32_t>(k));
    } else {
      level.add_child_digests(digests[children[k]]);
    }
  }
  return level;
}

}  // namespace dsrun::proto
