#pragma once
// The launcher's tree launch: the plan's hosts in tree order, each with its parent, the address its parent
// dials and the LaunchRequest a star launch would send it -> proto::buildTreeLaunch, signed once
// (tls::TreeSigner) -> one TreeLaunch per root. docs/agent.md "Tree launch".

#include <string>
#include <vector>

#include "launcher/backends/agent/agent_launch_request.h"
#include "launcher/backends/agent/agent_tree_plan.h"
#include "proto/protocol.h"
#include "proto/tree_launch_builder.h"
#include "tls/tree_signature.h"

namespace dsrun::launcher {

/// TreeLaunchHeader.valid_for_s dsrun signs with: how long, either way of the agents' clocks, a launch is
/// accepted (and its job id remembered against replay). Minutes, as Kerberos allows for clock skew: shorter
/// refuses launches on hosts whose clocks drift, longer widens the replay window of a restarted agent.
inline constexpr uint32_t kTreeLaunchValidForS = 300;

/// Throws ConfigError naming the agent when its Welcome does not offer tree launches (an older dsrun-agent,
/// which would refuse the TreeLaunch as an unexpected message after the other hosts had started): dsrun checks
/// every root's Welcome before it sends anything.
void requireTreeLaunch(const wire::Welcome& welcome, const std::string& host, int port);

/// The nodes of `plan`'s tree launch in plan order (the tree's pre-order): host name, the same name and
/// `port` to dial (as dsrun dials the agents today), the tree's parent, nodeLaunchRequests' request.
std::vector<proto::TreeLaunchNode> treeLaunchNodes(const WorldPlan& plan, const AgentTreePlan& tree, int port,
                                                   const NodeLaunchSettings& settings);

/// treeLaunchNodes without the requests: what the launch's shape needs (names, addresses, ports, parents).
std::vector<proto::TreeLaunchNode> treeLaunchShape(const WorldPlan& plan, const AgentTreePlan& tree, int port);

/// One root's TreeLaunch and where to send it.
struct RootTreeLaunch {
  size_t node = 0;  ///< index of the root in plan.hosts
  wire::TreeLaunch launch;
};

/// Builds, signs once and slices the launch: one TreeLaunch per root of `tree`, in order. Throws ConfigError
/// naming the root and the width when a root's launch (the largest message of the tree: every child's is a
/// part of its parent's) would exceed `maxFrameBytes`, the frame limit every agent enforces.
std::vector<RootTreeLaunch> signedTreeLaunches(const std::vector<proto::TreeLaunchNode>& nodes,
                                               const proto::TreeLaunchStamp& stamp, const tls::TreeSigner& signer,
                                               size_t maxFrameBytes = proto::kMaxFrameBytes);

/// The same for `shape` (treeLaunchShape's), each node's request made from `plan` and `settings` as the parts
/// are built, on `threads` threads (proto::buildTreeLaunch): what dsrun does, off its loop, while it dials the
/// roots (docs/agent.md "Tree launch"). The same launches as signedTreeLaunches(treeLaunchNodes(...)).
std::vector<RootTreeLaunch> signedTreeLaunches(const WorldPlan& plan, const std::vector<proto::TreeLaunchNode>& shape,
                                               const NodeLaunchSettings& settings,
                                               const proto::TreeLaunchStamp& stamp, const tls::TreeSigner& signer,
                                               unsigned threads, size_t maxFrameBytes = proto::kMaxFrameBytes);

}  // namespace dsrun::launcher
