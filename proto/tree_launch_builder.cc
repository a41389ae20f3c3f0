#include "proto/tree_launch_builder.h"

#include "common/error.h"
#include "proto/tree_delta.h"
#include "proto/tree_subtree.h"

namespace dsrun::proto {
namespace {

/// The same job settings on every node, or dsrun built the requests wrong.
void checkSameJob(const wire::LaunchRequest& first, const wire::LaunchRequest& r, size_t index) {
  DSRUN_CHECK(r.job_id() == first.job_id() && r.log().each_rank_log_dir() == first.log().each_rank_log_dir() &&
                  r.log().tag() == first.log().tag() &&
                  r.kill_grace_s() == first.kill_grace_s() && r.progress_interval_s() == first.progress_interval_s(),
              "node ", index, "'s LaunchRequest differs from node 0's outside its ranks");
}

const wire::RankLaunch* firstRank(const std::vector<TreeLaunchNode>& nodes) {
  for (const auto& node : nodes) {
    if (node.request.ranks_size() > 0) return &node.request.ranks(0);
  }
  return nullptr;
}

}  // namespace

TreeLaunchContent buildTreeLaunch(const std::vector<TreeLaunchNode>& nodes, const TreeLaunchStamp& stamp,
                                  const Sha256& sha256) {
  DSRUN_CHECK(!nodes.empty(), "a tree launch of no node");
  TreeLaunchContent content;
  for (const auto& node : nodes) content.parents.push_back(node.parent);
  const std::string orderError = treeOrderError(content.parents, false);
  DSRUN_CHECK(orderError.empty(), orderError);
  content.subtreeEnds = treeSubtreeEnds(content.parents);

  const wire::LaunchRequest& first = nodes.front().request;
  wire::TreeLaunchHeader header;
  header.set_job_id(first.job_id());
  if (const wire::RankLaunch* t = firstRank(nodes)) {
    wire::RankLaunch* rankTemplate = header.mutable_rank_template();
    *rankTemplate->mutable_argv() = t->argv();
    *rankTemplate->mutable_env() = t->env();
    rankTemplate->set_cwd(t->cwd());
  }
  *header.mutable_log() = first.log();
  header.set_kill_grace_s(first.kill_grace_s());
  header.set_progress_interval_s(first.progress_interval_s());
  header.set_issued_unix_us(stamp.issuedUnixUs);
  header.set_valid_for_s(stamp.validForS);
  header.set_tree_width(stamp.treeWidth);
  header.set_node_count(static_cast<uint32_t>(nodes.size()));
  header.set_launcher(stamp.launcher);
  if (first.has_rendezvous()) {
    // Job-wide and signed like the rest of the header; which node is the root each node works out from root_host.
    *header.mutable_rendezvous() = first.rendezvous();
    header.mutable_rendezvous()->clear_root();
  }
  content.header = header.SerializeAsString();

  std::vector<std::string> partHashes;
  partHashes.reserve(nodes.size());
  // One part, cleared and refilled per node: protobuf keeps the cleared strings and arrays for reuse, which
  // spares most of the allocations of 80,000 deltas (the builder's main cost at 10,000 nodes x 8 ranks).
  wire::TreeNodePart part;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const TreeLaunchNode& node = nodes[i];
    checkSameJob(first, node.request, i);
    part.Clear();
    part.set_host(node.host);
    part.set_address(node.address);
    part.set_port(node.port);
    for (int a = node.parent; a >= 0; a = nodes[static_cast<size_t>(a)].parent) part.add_ancestors(nodes[static_cast<size_t>(a)].host);
    for (const auto& rank : node.request.ranks()) fillRankDelta(header.rank_template(), rank, *part.add_ranks());
    for (const std::string& target : node.probeTargets) part.add_probe_targets(target);
    content.parts.push_back(part.SerializeAsString());
    partHashes.push_back(treePartHash(content.parts.back(), sha256));
  }
  content.digests = treeDigests(partHashes, content.parents, sha256);
  std::vector<const std::string*> rootDigests;
  for (size_t r : treeRoots(content.subtreeEnds)) rootDigests.push_back(&content.digests[r]);
  content.root = treeRoot(content.header, rootDigests, sha256);
  return content;
}

wire::TreeLaunch rootTreeLaunch(const TreeLaunchContent& content, size_t root, const std::string& signature,
                                const std::string& launcherCertificate) {
  DSRUN_CHECK(root < content.parents.size() && content.parents[root] == -1, "node ", root, " is not a root");
  google::protobuf::RepeatedPtrField<wire::TreeProofLevel> proof;
  // Level 0 has no part hash: above the roots there is only dsrun, whose "part" is the header.
  *proof.Add() = treeProofLevel("", treeRoots(content.subtreeEnds), root, content.digests);
  return treeSubtreeLaunch(content.header, signature, launcherCertificate, content.parts, content.parents, root,
                           content.subtreeEnds[root], std::move(proof));
}

}  // namespace dsrun::proto
