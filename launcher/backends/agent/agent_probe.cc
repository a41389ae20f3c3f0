#include "launcher/backends/agent/agent_probe.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>

#include "client/agent_client.h"

namespace dsrun::launcher {

namespace {

/// How often a probe loop looks at `cancel`.
constexpr auto kCancelPoll = std::chrono::milliseconds(50);

}  // namespace

std::vector<AgentProbe> probeAgents(boost::asio::ssl::context& ssl, const std::vector<std::string>& hosts, int port,
                                    const std::string& clientName, std::chrono::milliseconds timeout,
                                    const std::atomic<bool>* cancel) {
  boost::asio::io_context io;
  std::vector<AgentProbe> results(hosts.size());
  std::vector<std::shared_ptr<AgentClient>> clients;
  size_t answered = 0;
  for (size_t i = 0; i < hosts.size(); ++i) {
    results[i].host = hosts[i];
    AgentClient::Callbacks cb;
    cb.onReady = [&, i](const wire::Welcome& w) {
      results[i].ok = true;
      results[i].address = w.host_address();
      ++answered;
      clients[i]->close();  // no onClosed after close()
    };
    cb.onClosed = [&, i](const std::string& reason) {
      results[i].error = reason;
      ++answered;
    };
    clients.push_back(AgentClient::create(io, ssl, hosts[i], port, clientName, std::move(cb)));
  }
  for (auto& client : clients) client->connect(timeout);
  while (answered < hosts.size() && !(cancel != nullptr && cancel->load())) {
    if (io.run_one_for(kCancelPoll) == 0 && io.stopped()) break;
  }
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (!results[i].ok && results[i].error.empty()) results[i].error = "agent on " + hosts[i] + ": probe cancelled";
    clients[i]->close();
  }
  io.poll();  // let the closed clients' handlers run and release them
  return results;
}

}  // namespace dsrun::launcher
