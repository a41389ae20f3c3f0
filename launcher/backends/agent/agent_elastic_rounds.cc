#include "launcher/backends/agent/agent_elastic_rounds.h"

#include <unistd.h>

#include "launcher/backends/agent/agent_port_preflight.h"
#include "launcher/backends/agent/agent_probe.h"
#include "launcher/backends/agent/agent_tree_choice.h"
#include "common/logging.h"

namespace dsrun::launcher {

std::vector<HostProbe> AgentElasticRounds::probe(const std::vector<std::string>& hosts,
                                                 std::chrono::milliseconds timeout, const std::atomic<bool>* cancel) {
  std::vector<HostProbe> out;
  for (const AgentProbe& p : probeAgents(ssl_, hosts, settings_.port, settings_.clientName, timeout, cancel)) {
    out.push_back(HostProbe{p.host, p.ok, p.address, p.error});
  }
  return out;
}

MasterPortCheck AgentElasticRounds::checkMasterPort(const std::string& firstHost, int port) {
  try {
    return {learnAgentRendezvous(ssl_, firstHost, settings_.port, settings_.clientName, port, settings_.connectTimeout)
                .masterPort,
            {}};
  } catch (const AgentUnreachable& e) {
    return {std::nullopt, e.reason()};
  }
}

RoundOutcome AgentElasticRounds::runRound(const WorldPlan& plan, const RoundHooks& hooks) {
  AgentJob::Settings s = settings_;
  // --tree_width auto by this round's world: the hosts that answered this time.
  const AgentTreeChoice choice = chooseAgentTree(settings_.treeWidth, plan.hosts.size());
  DSRUN_LOG(INFO) << "agent launch: " << choice.why;
  s.treeWidth = choice.width;
  s.elasticRound = true;
  s.hooks = hooks;
  AgentJob job(plan, ssl_, s, STDOUT_FILENO, STDERR_FILENO);
  job.run();
  return job.outcome();
}

RoundWording AgentElasticRounds::wording() const {
  return {"agent not answering", "more agents answer", "start dsrun-agent on those hosts",
          "agents unreachable at launch"};
}

}  // namespace dsrun::launcher
