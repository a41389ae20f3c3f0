#include "launcher/backends/agent/agent_elastic_rounds.h"

#include <unistd.h>

#include "launcher/backends/agent/agent_probe.h"

namespace dsrun {

std::vector<HostProbe> AgentElasticRounds::probe(const std::vector<std::string>& hosts,
                                                 std::chrono::milliseconds timeout, const std::atomic<bool>* cancel) {
  std::vector<HostProbe> out;
  for (const AgentProbe& p : probeAgents(ssl_, hosts, settings_.port, settings_.clientName, timeout, cancel)) {
    out.push_back(HostProbe{p.host, p.ok, p.address, p.error});
  }
  return out;
}

RoundOutcome AgentElasticRounds::runRound(const WorldPlan& plan, const RoundHooks& hooks) {
  AgentJob::Settings s = settings_;
  s.elasticRound = true;
  s.rescaleWanted = hooks.rescaleWanted;
  s.onAllRanksStarted = hooks.onAllRanksStarted;
  AgentJob job(plan, ssl_, s, STDOUT_FILENO, STDERR_FILENO);
  const int code = job.run();
  // run() returns early (a signal while connecting, the MASTER_PORT pre-flight) without an outcome's code.
  RoundOutcome outcome = job.outcome();
  outcome.exitCode = code;
  return outcome;
}

RoundWording AgentElasticRounds::wording() const {
  RoundWording w;
  w.notAnswering = "agent not answering";
  w.moreAnswer = "more agents answer";
  w.startHint = "start dsrun-agent on those hosts";
  w.unreachableAtLaunch = "agents unreachable at launch";
  return w;
}

}  // namespace dsrun
