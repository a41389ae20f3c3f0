#include "proto/tree_launch_builder.h"

#include <algorithm>
#include <future>

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

}  // namespace

TreeLaunchContent buildTreeLaunch(const std::vector<TreeLaunchNode>& nodes, const TreeLaunchStamp& stamp,
                                  const Sha256& sha256) {
  return buildTreeLaunch(
      nodes, [&nodes](size_t i, wire::LaunchRequest&) -> const wire::LaunchRequest& { return nodes[i].request; },
      stamp, sha256, 1);
}

TreeLaunchContent buildTreeLaunch(const std::vector<TreeLaunchNode>& nodes, const TreeRequestSource& request,
                                  const TreeLaunchStamp& stamp, const Sha256& sha256, unsigned threads) {
  DSRUN_CHECK(!nodes.empty(), "a tree launch of no node");
  TreeLaunchContent content;
  for (const auto& node : nodes) content.parents.push_back(node.parent);
  const std::string orderError = treeOrderError(content.parents, false);
  DSRUN_CHECK(orderError.empty(), orderError);
  content.subtreeEnds = treeSubtreeEnds(content.parents);

  wire::LaunchRequest firstScratch;
  const wire::LaunchRequest first = request(0, firstScratch);  // a copy: the scratch is refilled below
  wire::TreeLaunchHeader header;
  header.set_job_id(first.job_id());
  // The template is the first rank of the first node that has one.
  for (size_t i = 0; i < nodes.size(); ++i) {
    const wire::LaunchRequest& r = request(i, firstScratch);
    if (r.ranks_size() == 0) continue;
    wire::RankLaunch* rankTemplate = header.mutable_rank_template();
    *rankTemplate->mutable_argv() = r.ranks(0).argv();
    *rankTemplate->mutable_env() = r.ranks(0).env();
    rankTemplate->set_cwd(r.ranks(0).cwd());
    break;
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

  content.parts.resize(nodes.size());
  std::vector<std::string> partHashes(nodes.size());
  // Nodes [begin, end): one part and one request, cleared and refilled per node: protobuf keeps the cleared
  // strings and arrays for reuse, which spares most of the allocations of 80,000 ranks.
  auto buildSlice = [&](size_t begin, size_t end) {
    wire::TreeNodePart part;
    wire::LaunchRequest scratch;
    for (size_t i = begin; i < end; ++i) {
      const TreeLaunchNode& node = nodes[i];
      const wire::LaunchRequest& r = request(i, scratch);
      checkSameJob(first, r, i);
      part.Clear();
      part.set_host(node.host);
      part.set_address(node.address);
      part.set_port(node.port);
      for (int a = node.parent; a >= 0; a = nodes[static_cast<size_t>(a)].parent) part.add_ancestors(nodes[static_cast<size_t>(a)].host);
      for (const auto& rank : r.ranks()) fillRankDelta(header.rank_template(), rank, *part.add_ranks());
      for (const std::string& target : node.probeTargets) part.add_probe_targets(target);
      part.SerializeToString(&content.parts[i]);
      partHashes[i] = treePartHash(content.parts[i], sha256);
    }
  };
  const size_t slices = std::clamp<size_t>(threads, 1, nodes.size());
  std::vector<std::future<void>> others;
  for (size_t s = 1; s < slices; ++s) {
    others.push_back(std::async(std::launch::async, buildSlice, nodes.size() * s / slices, nodes.size() * (s + 1) / slices));
  }
  buildSlice(0, nodes.size() / slices);
  for (auto& other : others) other.get();  // rethrows a slice's DSRUN_CHECK

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
