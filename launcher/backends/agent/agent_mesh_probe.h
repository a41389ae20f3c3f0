#pragma once
// The agent mesh probe (docs/agent.md; on by default, --no_mesh_probe): before any rank starts, every
// agent of the job is asked to open a TCP connection to the listen addresses of the agents
// meshProbePeers() names (all others up to 16 hosts, O(log N) beyond; agent_mesh_plan.h), all agents
// at once (MeshProbeRequest, agent/mesh_probe.h). A pair that cannot connect (a partial network
// partition: both hosts reach the launcher, not each other) is named before Gloo or NCCL would hang in
// their first collective: "dsn2 cannot reach dsn3:29600: No route to host".

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "client/agent_client.h"

namespace dsrun::launcher {

/// One agent of the job, as the probe sees it.
struct MeshMember {
  std::string host;     ///< as in the hostfile (the name the other agents are asked to reach)
  AgentClient* client;  ///< welcomed connection to its agent
};

/// What the probe found: one line per broken pair ("dsn2 cannot reach dsn3:29600: No route to host"),
/// and the slowest successful connection in microseconds.
struct MeshProbeOutcome {
  std::vector<std::string> broken;  ///< empty: every pair connected
  /// The fewest hosts whose removal leaves no broken pair (greedy: the host in most broken pairs first, the
  /// later in job order on a tie, so the first host, MASTER_ADDR's, stays): an elastic job re-forms without them.
  std::vector<std::string> suspects;
  uint32_t slowestMicros = 0;       ///< among the pairs that connected
  size_t pairs = 0;                 ///< (from, to) pairs the agents were asked to probe
  bool interrupted = false;         ///< interrupted() ended the wait
};

/// Runs the probe over `members` (agents listening on `agentPort`), running `io` until every agent
/// answered, a connection ended, `timeout` plus a second passed, or interrupted() is true. An agent that
/// does not answer counts as a broken line naming it; one that cannot probe (Welcome.mesh_probe unset: it
/// predates the probe) is only a target, so that a newer dsrun still launches on older agents. Loop
/// thread only; throws nothing of its own.
MeshProbeOutcome probeAgentMesh(boost::asio::io_context& io, const std::vector<MeshMember>& members, int agentPort,
                                std::chrono::milliseconds timeout, const std::function<bool()>& interrupted);

/// The greedy cover of `pairs` ({from, to} hosts that cannot connect) described at MeshProbeOutcome::suspects;
/// `order` is the job's host order.
std::vector<std::string> meshSuspects(const std::vector<std::pair<std::string, std::string>>& pairs,
                                      const std::vector<std::string>& order);

}  // namespace dsrun::launcher
