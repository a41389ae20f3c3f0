#include "launcher/backends/agent/agent_port_preflight.h"

#include <memory>

#include "common/error.h"
#include "common/logging.h"
#include "common/strings.h"

namespace dsrun::launcher {

std::optional<int> preflightAgentMasterPort(boost::asio::io_context& io, AgentClient& master, int port,
                                            std::chrono::milliseconds timeout,
                                            const std::function<bool()>& interrupted) {
  if (!master.agentChecksPorts()) {
    if (port == 0) {
      throw ConfigError(strCat("--master_port 0: the agent ", master.address(),
                               " cannot pick a port (it predates the MASTER_PORT pre-flight); nothing was started\n"
                               "  hint: pass a fixed --master_port, or upgrade dsrun-agent on ", master.host()));
    }
    DSRUN_LOG(WARN) << "agent " << master.address() << " predates the MASTER_PORT pre-flight; MASTER_PORT " << port
                    << " was not checked";
    return port;
  }
  // Shared with the callback: an answer arriving after a timeout must not write into this frame.
  const auto answer = std::make_shared<std::optional<wire::PortCheckReply>>();
  master.checkPort(port, [answer](const wire::PortCheckReply& r) { *answer = r; });
  const std::optional<wire::PortCheckReply>& reply = *answer;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!reply && !master.closed() && !interrupted()) {
    if (io.run_one_until(deadline) == 0 && std::chrono::steady_clock::now() >= deadline) break;
  }
  if (interrupted()) return std::nullopt;
  if (!reply) {
    if (master.closed()) {
      throw Error(strCat("agent ", master.address(), ": connection lost during the MASTER_PORT pre-flight; nothing "
                         "was started"));
    }
    throw TimeoutError(strCat("agent ", master.address(), ": no answer within ", timeout.count(),
                              " ms during the MASTER_PORT pre-flight; nothing was started"));
  }
  if (!reply->error().empty()) {
    // The agent's error may carry a hint line: "nothing was started" belongs to the first line.
    const std::string& error = reply->error();
    const size_t eol = error.find('\n');
    throw ConfigError(strCat("agent ", master.address(), ": ", error.substr(0, eol), "; nothing was started",
                             eol == std::string::npos ? std::string() : error.substr(eol)));
  }
  const int checked = static_cast<int>(reply->port());
  if (port == 0) {
    DSRUN_LOG(INFO) << "--master_port 0: MASTER_PORT=" << checked << " (free on " << master.host()
                    << ", picked by its agent)";
  }
  return checked;
}

std::string startAgentHint(int agentPort) {
  return strCat("\n  hint: start 'dsrun-agent --listen ADDR:", agentPort,
                " --tls_dir NODEDIR' on every host, NODEDIR made for it by 'dsrun --make_node_cert' from --tls_dir");
}

AgentRendezvous learnAgentRendezvous(boost::asio::ssl::context& ssl, const std::string& host, int agentPort,
                                     const std::string& clientName, int masterPort,
                                     std::chrono::milliseconds timeout) {
  boost::asio::io_context io;
  // Shared with the callbacks: they may run while the client is torn down below.
  struct State {
    bool ready = false;
    std::string address;
    std::optional<std::string> closed;
  };
  const auto state = std::make_shared<State>();
  AgentClient::Callbacks cb;
  cb.onReady = [state](const wire::Welcome& w) {
    state->ready = true;
    state->address = w.host_address();
  };
  cb.onClosed = [state](const std::string& reason) { state->closed = reason; };
  const std::shared_ptr<AgentClient> client = AgentClient::create(io, ssl, host, agentPort, clientName, std::move(cb));
  client->connect(timeout);
  while (!state->ready && !state->closed && io.run_one() > 0) {
  }
  if (!state->ready) {
    const std::string reason = state->closed.value_or(strCat("agent ", client->address(), ": no answer"));
    // An agent that answered with a version mismatch runs: its own hint (the same release everywhere) is the one.
    const bool answered = reason.find("protocol version mismatch") != std::string::npos;
    client->close();
    throw AgentUnreachable(strCat("cannot start the job, nothing was started: ", reason,
                                  answered ? std::string() : startAgentHint(agentPort)),
                           reason);
  }
  AgentRendezvous out;
  out.address = state->address.empty() ? host : state->address;
  try {
    out.masterPort = *preflightAgentMasterPort(io, *client, masterPort, timeout, [] { return false; });
  } catch (...) {
    client->close();
    throw;
  }
  client->close();
  io.poll();  // let the cancelled handlers release the client
  return out;
}

}  // namespace dsrun::launcher
