#pragma once
// Signed tree launches for the agent tests, made as dsrun makes them (proto/tree_launch_builder.h, signed
// once with the launcher key of a TestPki): nodes in pre-order, each with `ranks` ranks of one /bin/sh script
// that sees RANK, LOCAL_RANK and TREE_NODE (its node's host), global ranks numbered in node order.

#include <chrono>
#include <string>
#include <vector>

#include "proto/rank_env.h"
#include "proto/tree_launch_builder.h"
#include "proto/tree_launch_expander.h"
#include "tls/tree_signature.h"

namespace testing {

struct TreeTestNode {
  std::string host;     ///< the name in its certificate
  std::string address;  ///< where its parent dials it
  uint32_t port = 0;
  int parent = -1;      ///< index of an earlier node; -1: a root
  int ranks = 1;
};

inline int64_t nowUnixUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline const dsrun::proto::Sha256& testSha() {
  static const dsrun::proto::Sha256 sha = [](std::string_view data) { return dsrun::tls::sha256(data); };
  return sha;
}

/// The LaunchRequest a star launch would send each node.
/// `probeTargets`: per node, what it probes when launched with TreeLaunch.probe (none when shorter).
inline std::vector<dsrun::proto::TreeLaunchNode> treeNodes(
    const std::string& jobId, const std::vector<TreeTestNode>& nodes, const std::string& script,
    const std::vector<std::vector<std::string>>& probeTargets = {}) {
  std::vector<dsrun::proto::TreeLaunchNode> out;
  int rank = 0;
  for (const auto& n : nodes) {
    dsrun::proto::TreeLaunchNode node;
    if (out.size() < probeTargets.size()) node.probeTargets = probeTargets[out.size()];
    node.host = n.host;
    node.address = n.address;
    node.port = n.port;
    node.parent = n.parent;
    node.request.set_job_id(jobId);
    node.request.set_kill_grace_s(2);
    for (int local = 0; local < n.ranks; ++local, ++rank) {
      auto* r = node.request.add_ranks();
      r->set_rank(rank);
      r->set_local_rank(local);
      for (const char* word : {"/bin/sh", "-c"}) r->add_argv(word);
      r->add_argv(script);
      dsrun::proto::addEnv(*r, "LOCAL_RANK", std::to_string(local));
      dsrun::proto::addEnv(*r, "PATH", "/usr/bin:/bin");
      dsrun::proto::addEnv(*r, "RANK", std::to_string(rank));
      dsrun::proto::addEnv(*r, "TREE_NODE", n.host);
    }
    out.push_back(std::move(node));
  }
  return out;
}

/// The TreeLaunch dsrun sends the root `root`, signed by the launcher certificate of `signer`.
inline dsrun::wire::TreeLaunch signedRootLaunch(const dsrun::tls::TreeSigner& signer, const std::string& jobId,
                                                const std::vector<TreeTestNode>& nodes, const std::string& script,
                                                size_t root = 0, int64_t issuedUnixUs = nowUnixUs(),
                                                const std::vector<std::vector<std::string>>& probeTargets = {}) {
  const auto content = dsrun::proto::buildTreeLaunch(treeNodes(jobId, nodes, script, probeTargets),
                                                     {issuedUnixUs, 300, 2, "agent tree test"}, testSha());
  return dsrun::proto::rootTreeLaunch(content, root, signer.sign(dsrun::proto::treeSignedMessage(content.root)),
                                      signer.certificateDer());
}

/// The launch node `node` receives from its parent, as its parent would forward it (following the path down).
inline dsrun::wire::TreeLaunch forwardedLaunch(const dsrun::wire::TreeLaunch& rootLaunch, const std::string& host) {
  dsrun::wire::TreeLaunch launch = rootLaunch;
  for (;;) {
    const auto received = dsrun::proto::readTreeLaunch(launch, testSha());
    if (received.parts.at(0).host() == host) return launch;
    bool descended = false;
    for (auto& child : dsrun::proto::childTreeLaunches(launch, received)) {
      const auto sub = dsrun::proto::readTreeLaunch(child.launch, testSha());
      for (const auto& part : sub.parts) {
        if (part.host() == host) {
          launch = child.launch;
          descended = true;
          break;
        }
      }
      if (descended) break;
    }
    if (!descended) throw std::runtime_error("forwardedLaunch: no node " + host);
  }
}

}  // namespace testing
