#include "proto/tree_launch_expander.h"

#include "common/error.h"
#include "proto/tree_delta.h"
#include "proto/tree_subtree.h"

namespace dsrun::proto {
namespace {

/// A node's ancestors must be its parent followed by the parent's: a part cannot name a parent other than
/// the node the subtree puts above it (the receiver checks its own ancestors against its peer).
void checkAncestors(const ReceivedTreeLaunch& r, size_t i) {
  const wire::TreeNodePart& part = r.parts[i];
  const wire::TreeNodePart& parent = r.parts[static_cast<size_t>(r.parents[i])];
  bool ok = part.ancestors_size() == parent.ancestors_size() + 1 && part.ancestors(0) == parent.host();
  for (int a = 0; ok && a < parent.ancestors_size(); ++a) ok = part.ancestors(a + 1) == parent.ancestors(a);
  if (!ok) {
    throw Error(strCat("tree launch: node ", i, " (", part.host(), ") does not name its parent ", parent.host(),
                       " and the parent's ancestors as its own"));
  }
}

}  // namespace

ReceivedTreeLaunch readTreeLaunch(const wire::TreeLaunch& launch, const Sha256& sha256) {
  ReceivedTreeLaunch r;
  if (launch.subtree_size() == 0) throw Error("tree launch: an empty subtree");
  if (!r.header.ParseFromString(launch.header())) throw Error("tree launch: the header does not parse");
  r.parts.resize(static_cast<size_t>(launch.subtree_size()));
  for (int i = 0; i < launch.subtree_size(); ++i) {
    const wire::TreeNode& node = launch.subtree(i);
    if (!r.parts[static_cast<size_t>(i)].ParseFromString(node.part())) {
      throw Error(strCat("tree launch: node ", i, "'s part does not parse"));
    }
    r.parents.push_back(node.parent());
    r.partHashes.push_back(treePartHash(node.part(), sha256));
  }
  const std::string orderError = treeOrderError(r.parents, true);
  if (!orderError.empty()) throw Error(strCat("tree launch: the subtree is not in pre-order: ", orderError));
  for (size_t i = 1; i < r.parts.size(); ++i) checkAncestors(r, i);
  r.subtreeEnds = treeSubtreeEnds(r.parents);
  r.digests = treeDigests(r.partHashes, r.parents, sha256);
  r.root = treeRootFromProof(launch.header(), r.digests[0], launch.proof(), sha256);
  return r;
}

wire::LaunchRequest ownLaunchRequest(const ReceivedTreeLaunch& received) {
  wire::LaunchRequest request;
  request.set_job_id(received.header.job_id());
  for (const auto& delta : received.parts[0].ranks()) {
    *request.add_ranks() = applyRankDelta(received.header.rank_template(), delta);
  }
  *request.mutable_log() = received.header.log();
  request.set_kill_grace_s(received.header.kill_grace_s());
  request.set_progress_interval_s(received.header.progress_interval_s());
  if (received.header.has_rendezvous()) {
    *request.mutable_rendezvous() = received.header.rendezvous();
    request.mutable_rendezvous()->set_root(received.parts[0].host() == received.header.rendezvous().root_host());
  }
  return request;
}

std::vector<ChildTreeLaunch> childTreeLaunches(const wire::TreeLaunch& launch, const ReceivedTreeLaunch& received) {
  std::vector<std::string> parts;
  parts.reserve(static_cast<size_t>(launch.subtree_size()));
  for (const auto& node : launch.subtree()) parts.push_back(node.part());
  const std::vector<size_t> children = treeChildren(received.subtreeEnds, 0);
  std::vector<ChildTreeLaunch> out;
  out.reserve(children.size());
  for (size_t c : children) {
    google::protobuf::RepeatedPtrField<wire::TreeProofLevel> proof = launch.proof();
    *proof.Add() = treeProofLevel(received.partHashes[0], children, c, received.digests);
    ChildTreeLaunch child;
    child.host = received.parts[c].host();
    child.address = received.parts[c].address();
    child.port = received.parts[c].port();
    child.launch = treeSubtreeLaunch(launch.header(), launch.signature(), launch.launcher_certificate(), parts,
                                     received.parents, c, received.subtreeEnds[c], std::move(proof));
    out.push_back(std::move(child));
  }
  return out;
}

}  // namespace dsrun::proto
