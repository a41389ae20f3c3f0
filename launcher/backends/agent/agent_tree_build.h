#pragma once
// TreeLaunchBuild: dsrun's tree launch (agent_tree_launch.h) built and signed on threads of its own while its
// loop dials the roots, so that the build overlaps the roots' handshakes instead of preceding them. At 10,000
// nodes x 8 ranks building the launch first was about half of a warm launch's time (docs/benchmarks.md
// "Projection to 10,000 nodes"). docs/agent.md "Tree launch".

#include <future>
#include <string>
#include <vector>

#include "launcher/backends/agent/agent_launch_request.h"
#include "launcher/backends/agent/agent_tree_launch.h"
#include "launcher/backends/agent/agent_tree_plan.h"
#include "launcher/world_plan.h"

namespace dsrun::launcher {

class TreeLaunchBuild {
 public:
  /// Reads the launcher's signing key from `tlsDir` now (a ConfigError names the file before anything is
  /// dialled), then starts the build. `probeTargets`: each node's part names the agents it probes
  /// (agent_tree_probe.h). `plan` and `tree` must outlive this object.
  TreeLaunchBuild(const WorldPlan& plan, const AgentTreePlan& tree, int port, const NodeLaunchSettings& settings,
                  const std::string& tlsDir, const proto::TreeLaunchStamp& stamp, bool probeTargets);
  /// Waits for the build to end (a build is never abandoned half-way: it reads `plan`).
  ~TreeLaunchBuild();

  /// One launch per root (signedTreeLaunches). Waits for them; rethrows the build's error (a root's launch
  /// over the agents' frame limit). Once only.
  std::vector<RootTreeLaunch> take();

  /// The threads a build of `nodes` nodes uses: the machine's cores, but one per 64 nodes at least (~1 ms of
  /// building each: a thread costs ~0.05 ms to start).
  static unsigned threadsFor(size_t nodes);

 private:
  std::future<std::vector<RootTreeLaunch>> result_;
};

}  // namespace dsrun::launcher
