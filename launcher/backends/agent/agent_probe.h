#pragma once
// probeAgents: which hosts' dsrun-agents answer right now. Each probe is a full handshake (connect,
// mutual TLS, Hello, Welcome) then a clean close: a host counts as alive only if it would accept a launch.
// Used by the elastic controller before every world and, on a second thread, to notice agents that
// (re)appear while a job runs.

#include <boost/asio/ssl/context.hpp>
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

namespace dsrun::launcher {

struct AgentProbe {
  std::string host;     ///< as in the hostfile
  bool ok = false;      ///< welcomed us
  std::string address;  ///< Welcome.host_address (ok only)
  std::string error;    ///< why not (not ok): one line naming agent HOST:PORT
};

/// Probes every host in parallel, each within `timeout`; results in `hosts` order. `cancel`, when set
/// from another thread, ends the probes early (the unanswered ones report "cancelled").
std::vector<AgentProbe> probeAgents(boost::asio::ssl::context& ssl, const std::vector<std::string>& hosts, int port,
                                    const std::string& clientName, std::chrono::milliseconds timeout,
                                    const std::atomic<bool>* cancel = nullptr);

}  // namespace dsrun::launcher
