#include "launcher/backends/agent/agent_port_preflight.h"

#include <memory>

#include "common/error.h"
#include "common/exit_status.h"
#include "common/logging.h"
#include "common/strings.h"
#include "launcher/backends/agent/agent_job.h"

namespace dsrun {

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
  const auto answer = std::make_shared<std::optional<agent::PortCheckReply>>();
  master.checkPort(port, [answer](const agent::PortCheckReply& r) { *answer = r; });
  const std::optional<agent::PortCheckReply>& reply = *answer;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!reply && !master.closed() && !interrupted()) {
    if (io.run_one_until(deadline) == 0 && std::chrono::steady_clock::now() >= deadline) break;
  }
  if (interrupted()) return std::nullopt;
  if (!reply) {
    throw Error(strCat("agent ", master.address(), ": ",
                       master.closed() ? "connection lost" : strCat("no answer within ", timeout.count(), " ms"),
                       " during the MASTER_PORT pre-flight; nothing was started"));
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

std::optional<int> AgentJob::preflightMasterPort() {
  try {
    // nodes_ is in host order and the first host holds rank 0, whose c10d store binds MASTER_PORT.
    const std::optional<int> port = preflightAgentMasterPort(io_, *nodes_.front()->client, plan_.masterPort,
                                                             settings_.connectTimeout,
                                                             [this] { return firstSignal() != 0; });
    if (port) {
      masterPort_ = *port;
      return std::nullopt;
    }
  } catch (...) {
    for (auto& node : nodes_) node->client->close();
    throw;
  }
  for (auto& node : nodes_) node->client->close();
  notice(strCat("dsrun: received ", signalName(firstSignal()), " during the MASTER_PORT pre-flight; nothing was started"));
  writer_.waitIdle(std::chrono::milliseconds(1000));
  return 128 + firstSignal();
}

}  // namespace dsrun
