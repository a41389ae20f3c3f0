#pragma once
// AgentBackend (`--launcher agent`): runs every host's ranks through the dsrun-agent on that host,
// over mutually authenticated TLS (--tls_dir, --agent_port). See docs/agent.md.

#include "launcher/backend.h"

namespace dsrun {

class AgentBackend : public Backend {
 public:
  std::string_view name() const override { return "agent"; }
  /// Always usable: the agent client is built in; unreachable agents are reported by run().
  std::optional<std::string> unavailableReason() const override { return std::nullopt; }
  /// MASTER_ADDR comes from the first host's agent (Welcome.host_address): no ssh anywhere.
  MasterAddrSource preflightFirstHost(const std::string&, const LaunchContext&) override {
    return {MasterAddrSource::Kind::FromAgent, {}};
  }
  /// No command runs on the nodes; each entry names the agent and the ranks it is asked to start:
  /// {"dsrun-agent", "HOST:PORT", "--job_id", ID, "--ranks", "0,1"}.
  std::vector<NodeCommand> nodeCommands(const WorldPlan& plan, const LaunchContext& ctx) const override;
  /// Connects to every agent (nothing starts unless all accept us), runs the job, returns its exit
  /// code. Throws ConfigError without --tls_dir or with an unusable one, Error if an agent is
  /// unreachable or refuses, or if a rank cannot be spawned.
  int run(const WorldPlan& plan, const LaunchContext& ctx) override;
};

}  // namespace dsrun
