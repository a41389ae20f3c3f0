#pragma once
// The agent backend's rendezvous, learned before the launch is planned (docs/agent.md): the agent of the
// first host (where rank 0's c10d store will bind MASTER_PORT) says the address it answers on (its Welcome:
// MASTER_ADDR without ssh) and checks that the port can be bound there, or picks a free one for
// --master_port 0 (PortCheckRequest, agent/port_preflight.h). A port in use ends the launch with one error
// naming the host, the port and its holder; nothing starts.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "common/error.h"
#include "client/agent_client.h"

namespace dsrun::launcher {

/// The agent could not be reached or refused us (learnAgentRendezvous); what() is the launch's error with its
/// hint, reason() the connection's own line ("agent HOST:PORT: ...").
class AgentUnreachable : public Error {
 public:
  AgentUnreachable(const std::string& message, std::string reason) : Error(message), reason_(std::move(reason)) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

/// Asks `master` (welcomed) about `port` (0: pick one) and runs `io` until it answers, the connection
/// ends, `timeout` passes or `interrupted()` turns true (then returns nullopt). Returns the port to use.
/// An agent without the check (Welcome.port_check unset) is trusted with a fixed port. Throws ConfigError
/// for a port in use (naming the host, port and holder) and for --master_port 0 with such an agent,
/// TimeoutError when the agent does not answer within `timeout`, Error when the connection ends. Loop thread
/// only.
std::optional<int> preflightAgentMasterPort(boost::asio::io_context& io, AgentClient& master, int port,
                                            std::chrono::milliseconds timeout,
                                            const std::function<bool()>& interrupted);

/// What the first host's agent told us before the launch.
struct AgentRendezvous {
  std::string address;  ///< Welcome.host_address: the agent's address as we dialled it (MASTER_ADDR)
  int masterPort = 0;   ///< MASTER_PORT as preflightAgentMasterPort checked or picked it
};

/// Connects to the agent on `host`:`agentPort` as `clientName` (one connection, closed before returning), waits
/// for its Welcome and runs the MASTER_PORT pre-flight for `masterPort`, each within `timeout`. Throws
/// AgentUnreachable ("cannot start the job, nothing was started: agent HOST:PORT: ...", with a hint) when the
/// agent cannot be reached or refuses us, and what preflightAgentMasterPort throws.
AgentRendezvous learnAgentRendezvous(boost::asio::ssl::context& ssl, const std::string& host, int agentPort,
                                     const std::string& clientName, int masterPort,
                                     std::chrono::milliseconds timeout);

/// The hint after an agent that cannot be reached: how to start one.
std::string startAgentHint(int agentPort);

}  // namespace dsrun::launcher
