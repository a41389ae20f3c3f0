#pragma once
// The launcher's tree launch: the plan's hosts in tree order, each with its parent, the address its parent
// dials and the LaunchRequest a star launch would send it -> proto::buildTreeLaunch, signed once
// (tls::TreeSigner) -> one TreeLaunch per root. docs/agent.md "Tree launch".

#include <string>
#include <vector>

#include "launcher/backends/agent/agent_launch_request.h"
#include "launcher/backends/agent/agent_tree_plan.h"
#include "proto/tree_launch_builder.h"
#include "tls/tree_signature.h"

namespace dsrun {

/// The nodes of `plan`'s tree launch in plan order (the tree's pre-order): host name, the same name and
/// `port` to dial (as dsrun dials the agents today), the tree's parent, nodeLaunchRequests' request.
std::vector<proto::TreeLaunchNode> treeLaunchNodes(const WorldPlan& plan, const AgentTreePlan& tree, int port,
                                                   const NodeLaunchSettings& settings);

/// One root's TreeLaunch and where to send it.
struct RootTreeLaunch {
  size_t node = 0;  ///< index of the root in plan.hosts
  wire::TreeLaunch launch;
};

/// Builds, signs once and slices the launch: one TreeLaunch per root of `tree`, in order.
std::vector<RootTreeLaunch> signedTreeLaunches(const std::vector<proto::TreeLaunchNode>& nodes,
                                               const proto::TreeLaunchStamp& stamp, const tls::TreeSigner& signer);

}  // namespace dsrun
