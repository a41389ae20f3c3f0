#pragma once
// AgentElasticRounds: the agent backend's side of elastic training (elastic_rounds.h). A probe is a full
// handshake with each host's dsrun-agent (probeAgents); a round is one AgentJob in its elastic mode (no
// root-cause line, unreachable agents end the round, rescaleWanted asked at every heartbeat, the mesh probe
// before the launch).

#include <boost/asio/ssl/context.hpp>

#include "launcher/backends/agent/agent_job.h"
#include "launcher/elastic_training/elastic_rounds.h"

namespace dsrun::launcher {

class AgentElasticRounds : public ElasticRounds {
 public:
  /// `ssl` outlives this object; `settings` is what every round's AgentJob gets.
  AgentElasticRounds(boost::asio::ssl::context& ssl, AgentJob::Settings settings)
      : ssl_(ssl), settings_(std::move(settings)) {}

  std::vector<HostProbe> probe(const std::vector<std::string>& hosts, std::chrono::milliseconds timeout,
                               const std::atomic<bool>* cancel) override;
  /// The MASTER_PORT pre-flight of the world's first agent (learnAgentRendezvous), on a connection of its own.
  MasterPortCheck checkMasterPort(const std::string& firstHost, int port) override;
  RoundOutcome runRound(const WorldPlan& plan, const RoundHooks& hooks) override;
  RoundWording wording() const override;

 private:
  boost::asio::ssl::context& ssl_;  ///< client TLS context
  AgentJob::Settings settings_;     ///< every round's settings, before the hooks
};

}  // namespace dsrun::launcher
