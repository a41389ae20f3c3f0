#include "launcher/backends/agent/stack_dump.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <set>

#include "common/strings.h"
#include "client/agent_client.h"

namespace dsrun::launcher {

namespace {

/// One collection in flight; kept alive by the callbacks of its clients and its timer until it finishes.
struct Collection : std::enable_shared_from_this<Collection> {
  Collection(boost::asio::io_context& io, std::chrono::milliseconds timeout, std::function<void(RankStacks)> done)
      : io(io), timer(io), timeout(timeout), done(std::move(done)) {}

  /// Every rank answered or the time is up: hands the stacks over once and lets the clients go.
  void finish() {
    if (finished) return;
    finished = true;
    timer.cancel();
    for (int rank : pending) stacks[rank] += strCat("\n(stacks incomplete: no answer within ", timeout.count(), " ms)\n");
    for (auto& client : clients) client->close();
    // The clients may be inside their own handler now: release them (and the cycle through their
    // callbacks) after it returns.
    boost::asio::post(io, [self = shared_from_this()] { self->clients.clear(); });
    done(std::move(stacks));
  }
  void answered(int rank) {
    pending.erase(rank);
    if (pending.empty()) finish();
  }

  boost::asio::io_context& io;
  boost::asio::steady_timer timer;            ///< the collection's deadline
  std::chrono::milliseconds timeout;
  std::function<void(RankStacks)> done;
  RankStacks stacks;
  std::set<int> pending;                      ///< ranks with no answer yet
  std::vector<std::shared_ptr<AgentClient>> clients;
  bool finished = false;
};

}  // namespace

void collectStacks(boost::asio::io_context& io, boost::asio::ssl::context& ssl, int port,
                   const std::string& clientName, const std::string& jobId, const std::vector<StackTarget>& targets,
                   std::chrono::milliseconds timeout, std::function<void(RankStacks)> done) {
  auto c = std::make_shared<Collection>(io, timeout, std::move(done));
  std::map<std::string, std::vector<StackTarget>> byHost;
  for (const StackTarget& t : targets) {
    byHost[t.host].push_back(t);
    c->pending.insert(t.rank);
  }
  if (c->pending.empty()) {
    boost::asio::post(io, [c] { c->finish(); });
    return;
  }
  for (const auto& [host, ranks] : byHost) {
    AgentClient::Callbacks cb;
    const size_t index = c->clients.size();
    // The clients live in the collection: a weak pointer keeps no cycle, and a client's late callback (after
    // the collection finished and let go) finds nothing.
    const std::weak_ptr<Collection> weak = c;
    cb.onReady = [weak, index, jobId, ranks = ranks](const wire::Welcome&) {
      const auto c = weak.lock();
      if (!c || c->finished) return;
      wire::Envelope e;
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
      c->clients[index]->send(e);
    };
    cb.onOutput = [weak](const wire::OutputChunk& chunk) {
      const auto c = weak.lock();
      if (c && !c->finished) c->stacks[chunk.rank()] += chunk.data();
    };
    cb.onRankExited = [weak](const wire::RankExited& e) {
      const auto c = weak.lock();
      if (c && !c->finished) c->answered(e.rank());
    };
    const auto failHost = [weak, ranks = ranks](const std::string& why) {
      const auto c = weak.lock();
      for (const StackTarget& t : ranks) {
        if (!c || c->finished || c->pending.count(t.rank) == 0) continue;
        c->stacks[t.rank] += why;
        c->answered(t.rank);
      }
    };
    cb.onError = [failHost](const wire::Error& e) { failHost(e.message()); };
    cb.onClosed = failHost;
    c->clients.push_back(AgentClient::create(io, ssl, host, port, clientName, std::move(cb)));
  }
  for (auto& client : c->clients) client->connect(timeout);
  c->timer.expires_after(timeout);
  c->timer.async_wait([c](const boost::system::error_code& ec) {
    if (!ec) c->finish();
  });
}

}  // namespace dsrun::launcher
