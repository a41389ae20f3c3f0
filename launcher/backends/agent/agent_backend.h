#pragma once
// AgentBackend (`--launcher agent`): runs every host's ranks through the dsrun-agent on that host,
// over mutually authenticated TLS (--tls_dir, --agent_port). See docs/agent.md.

#include <boost/asio/ssl/context.hpp>
#include <optional>

#include "launcher/backend.h"

namespace dsrun::launcher {

class AgentBackend : public Backend {
 public:
  std::string_view name() const override { return "agent"; }
  /// Always usable: the agent client is built in; unreachable agents are reported by run().
  std::optional<std::string> unavailableReason() const override { return std::nullopt; }
  /// The rendezvous from the first host's agent (learnAgentRendezvous, one short connection): MASTER_ADDR is
  /// the address it answers on (no ssh anywhere), MASTER_PORT checked or picked there. Not for an elastic
  /// job, whose every world checks its own first host. Throws ConfigError without --tls_dir or with an
  /// unusable one, and what learnAgentRendezvous throws.
  LaunchPreparation prepareLaunch(const WorldPlan& draft, const LaunchContext& ctx) override;
  /// Slots for a tree launch: its build plans each node's commands on threads while the roots are dialled.
  RankDetail rankDetail(const WorldPlan& draft, const LaunchContext& ctx) const override;
  /// No command runs on the nodes; each entry names the agent and the ranks it is asked to start:
  /// {"dsrun-agent", "HOST:PORT", "--job_id", ID, "--ranks", "0,1"}.
  std::vector<NodeCommand> nodeCommands(const WorldPlan& plan, const LaunchContext& ctx) const override;
  /// "agent_launch": star or tree and why (agent_tree_choice.h); with a tree, "agent_tree": the tree the launch
  /// would take (agent_tree_dry_run.h).
  std::vector<DryRunSection> dryRunSections(const WorldPlan& plan, const LaunchContext& ctx) const override;
  /// Connects to every agent (nothing starts unless all accept us), runs the job, returns its exit
  /// code. Throws ConfigError without --tls_dir or with an unusable one, Error if an agent is
  /// unreachable or refuses, or if a rank cannot be spawned.
  int run(const WorldPlan& plan, const LaunchContext& ctx) override;

 private:
  /// The TLS context prepareLaunch loaded (--tls_dir), for the run that follows it: loading the CA, certificate,
  /// key and revocation list again cost ~3 ms of CPU before the first root's dial. run() takes it; a restart
  /// loads its own, so that it checks the agents against the revocation list of its time.
  std::optional<boost::asio::ssl::context> preparedSsl_;
};

}  // namespace dsrun::launcher
