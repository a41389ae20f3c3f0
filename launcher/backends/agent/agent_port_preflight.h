#pragma once
// MASTER_PORT pre-flight on the agent backend (docs/agent.md): before any rank starts,
// the agent of the first host (where rank 0's c10d store will bind MASTER_PORT) checks that the port can
// be bound there, or picks a free one for --master_port 0 (PortCheckRequest, agent/port_preflight.h). A
// port in use ends the launch with one error naming the host, the port and its holder; nothing starts.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <optional>

#include "launcher/backends/agent/agent_client.h"

namespace dsrun {

/// Asks `master` (welcomed) about `port` (0: pick one) and runs `io` until it answers, the connection
/// ends, `timeout` passes or `interrupted()` turns true (then returns nullopt). Returns the port to use.
/// An agent without the check (Welcome.port_check unset) is trusted with a fixed port. Throws ConfigError
/// for a port in use (naming the host, port and holder) and for --master_port 0 with such an agent, Error
/// when the agent does not answer. Loop thread only.
std::optional<int> preflightAgentMasterPort(boost::asio::io_context& io, AgentClient& master, int port,
                                            std::chrono::milliseconds timeout,
                                            const std::function<bool()>& interrupted);

}  // namespace dsrun
