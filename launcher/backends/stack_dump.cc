#include "launcher/backends/stack_dump.h"

#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include "common/error.h"
#include "supervision/stack_files.h"
#include "common/strings.h"
#include "launcher/agent_client.h"

namespace dsrun {


std::map<int, std::string> collectStacks(boost::asio::ssl::context& ssl, int port, const std::string& clientName,
                                         const std::string& jobId, const std::vector<StackTarget>& targets,
                                         std::chrono::milliseconds timeout) {
  boost::asio::io_context io;
  std::map<int, std::string> stacks;
  std::set<int> pending;
  std::map<std::string, std::vector<StackTarget>> byHost;
  for (const StackTarget& t : targets) {
    byHost[t.host].push_back(t);
    pending.insert(t.rank);
  }
  std::vector<std::shared_ptr<AgentClient>> clients;
  for (const auto& [host, ranks] : byHost) {
    AgentClient::Callbacks cb;
    const size_t index = clients.size();
    cb.onReady = [&, index, ranks = ranks](const agent::Welcome&) {
      agent::Envelope e;
      auto* launch = e.mutable_launch();
      launch->set_job_id(jobId + ".stacks");
      launch->set_kill_grace_s(1);
      for (const StackTarget& t : ranks) {
        auto* r = launch->add_ranks();
        r->set_rank(t.rank);
        r->set_local_rank(0);
        for (const char* word : {"sh", "-c", stackScript(), "dsrun-stacks"}) r->add_argv(word);
        r->add_argv(std::to_string(t.pid));
      }
      clients[index]->send(e);
    };
    cb.onOutput = [&](const agent::OutputChunk& chunk) { stacks[chunk.rank()] += chunk.data(); };
    cb.onRankExited = [&](const agent::RankExited& e) { pending.erase(e.rank()); };
    cb.onError = [&, ranks = ranks](const agent::Error& e) {
      for (const StackTarget& t : ranks) {
        stacks[t.rank] += e.message();
        pending.erase(t.rank);
      }
    };
    cb.onClosed = [&, ranks = ranks](const std::string& reason) {
      for (const StackTarget& t : ranks) {
        if (pending.erase(t.rank) > 0) stacks[t.rank] += reason;
      }
    };
    clients.push_back(AgentClient::create(io, ssl, host, port, clientName, std::move(cb)));
  }
  for (auto& client : clients) client->connect(timeout);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pending.empty() && std::chrono::steady_clock::now() < deadline) {
    if (io.run_one_until(deadline) == 0) break;
  }
  for (int rank : pending) stacks[rank] += strCat("\n(stacks incomplete: no answer within ", timeout.count(), " ms)\n");
  for (auto& client : clients) client->close();
  io.poll();
  return stacks;
}


}  // namespace dsrun
