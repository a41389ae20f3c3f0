// The Session against a FakeConnection and a JobTable on a FakeSpawner: the launcher's frames go in,
// the frames the session writes come out, and rank exits are told to the table as the Reaper would.
#include "agent/session.h"

#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "agent/job_table.h"
#include "agent/request_handler.h"
#include "agent/session_manager.h"
#include "tests/supervision/fake_spawner.h"
#include "proto/protocol.h"
#include "proto/rank_env.h"
#include "tests/agent/fake_connection.h"
#include "tests/agent/run_until.h"

using Catch::Matchers::Contains;
using dsrun::wire::Envelope;
using dsrun::agent::JobTable;
using dsrun::agent::RequestHandler;
using dsrun::agent::Session;
using dsrun::agent::SessionManager;
using testing::FakeConnection;
using testing::FakeWire;
using testing::runUntil;
using namespace std::chrono_literals;

namespace {

Envelope hello() {
  Envelope e;
  e.mutable_hello()->set_protocol_version(dsrun::proto::kProtocolVersion);
  e.mutable_hello()->set_client_name("session_test");
  return e;
}

Envelope launch(const std::string& jobId, const std::vector<std::string>& argv0s) {
  Envelope e;
  e.mutable_launch()->set_job_id(jobId);
  for (size_t r = 0; r < argv0s.size(); ++r) {
    auto* rank = e.mutable_launch()->add_ranks();
    rank->set_rank(static_cast<int>(r));
    rank->add_argv(argv0s[r]);
    dsrun::proto::addEnv(*rank, "RANK", std::to_string(r));
  }
  return e;
}

/// The agent's parts below the socket, one FakeWire per launcher connection.
struct Agent {
  Agent() : table(io, spawner, sessions, tableOptions()), handler({"test-node", 10000, 4096}) {}
  ~Agent() {
    sessions.stopAll("");
    io.poll();
  }
  static JobTable::Options tableOptions() {
    JobTable::Options o;
    o.killGrace = 10s;  // no test here waits for SIGKILL
    o.hostName = "test-node";
    return o;
  }

  /// A new launcher connection, started (its handshake not yet run).
  std::shared_ptr<FakeWire> connect() {
    auto wire = std::make_shared<FakeWire>();
    Session::Timing timing;
    timing.heartbeatPeriod = 10s;  // no test here is about heartbeats
    auto session = std::make_shared<Session>(nextId, std::make_unique<FakeConnection>(io, wire),
                                             "launcher-" + std::to_string(nextId), sessions, table, handler, timing);
    ++nextId;
    live.push_back(session);
    sessions.start(session);
    return wire;
  }

  /// Frames of `wire` that satisfy `pred`.
  template <typename Pred>
  static std::vector<Envelope> framesWhere(const FakeWire& wire, Pred pred) {
    std::vector<Envelope> out;
    for (auto& e : wire.frames()) {
      if (pred(e)) out.push_back(e);
    }
    return out;
  }

  boost::asio::io_context io;
  dsrun::FakeSpawner spawner;
  SessionManager sessions;
  JobTable table;
  RequestHandler handler;
  uint64_t nextId = 1;
  std::vector<std::shared_ptr<Session>> live;  ///< kept so a test can read a stopped session's wire
};

bool isStarted(const Envelope& e) { return e.has_rank_started(); }
bool isExited(const Envelope& e) { return e.has_rank_exited(); }

}  // namespace

TEST_CASE("a session welcomes its launcher, starts the job it asks for and sends each rank event as its message",
          "[agent][session]") {
  Agent agent;
  auto wire = agent.connect();
  wire->send(hello());
  wire->send(launch("job-s", {"train.py", "train.py"}));
  runUntil(agent.io, [&] { return Agent::framesWhere(*wire, isStarted).size() == 2; }, "two RankStarted");
  const auto frames = wire->frames();
  REQUIRE(frames[0].has_welcome());
  CHECK(frames[0].welcome().host_address() == "10.0.0.2");
  REQUIRE(agent.spawner.spawned.size() == 2);
  CHECK(agent.spawner.spawned[1].command.argv == std::vector<std::string>{"train.py"});
  CHECK(agent.spawner.spawned[1].command.env.at("RANK") == "1");
  const auto started = Agent::framesWhere(*wire, isStarted);
  CHECK(started[0].rank_started().job_id() == "job-s");
  CHECK(started[0].rank_started().pid() == agent.spawner.spawned[0].pid);

  agent.table.onReaped(agent.spawner.spawned[0].pid, W_EXITCODE(5, 0));
  agent.table.onReaped(agent.spawner.spawned[1].pid, SIGKILL);
  runUntil(agent.io, [&] { return Agent::framesWhere(*wire, isExited).size() == 2; }, "two RankExited");
  const auto exited = Agent::framesWhere(*wire, isExited);
  CHECK(exited[0].rank_exited().job_id() == "job-s");
  CHECK(exited[0].rank_exited().exit_code() == 5);
  CHECK(exited[1].rank_exited().rank() == 1);
  CHECK(exited[1].rank_exited().signal() == SIGKILL);
}

TEST_CASE("a rank that cannot be started reaches the launcher as an Error naming the job", "[agent][session]") {
  Agent agent;
  agent.spawner.failNext("missing.py", ENOENT);
  auto wire = agent.connect();
  wire->send(hello());
  wire->send(launch("job-bad", {"missing.py"}));
  runUntil(agent.io, [&] { return !Agent::framesWhere(*wire, [](auto& e) { return e.has_error(); }).empty(); },
           "an Error");
  const auto errors = Agent::framesWhere(*wire, [](auto& e) { return e.has_error(); });
  CHECK(errors[0].error().job_id() == "job-bad");
  CHECK_THAT(errors[0].error().message(), Contains("test-node rank 0: spawn 'missing.py'"));
  CHECK(wire->closed == false);  // a job's failure does not end the connection
}

TEST_CASE("a launcher that hangs up has its jobs stopped, while another launcher's job runs on and hears only "
          "of its own ranks",
          "[agent][session]") {
  Agent agent;
  auto a = agent.connect();
  auto b = agent.connect();
  a->send(hello());
  b->send(hello());
  a->send(launch("job-a", {"a.py"}));
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 1; }, "job-a to start");
  b->send(launch("job-b", {"b.py"}));
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 2; }, "job-b to start");
  const pid_t pidA = agent.spawner.spawned[0].pid;
  const pid_t pidB = agent.spawner.spawned[1].pid;

  a->hangUp();
  runUntil(agent.io, [&] { return agent.sessions.size() == 1; }, "the first session to end");
  CHECK(a->closed);
  CHECK(agent.spawner.signalsTo(pidA) == std::vector<int>{SIGTERM});
  CHECK(agent.spawner.signalsTo(pidB).empty());

  const size_t writtenByA = a->written.size();
  agent.table.onReaped(pidA, SIGTERM);
  agent.table.onReaped(pidB, W_EXITCODE(0, 0));
  runUntil(agent.io, [&] { return !Agent::framesWhere(*b, isExited).empty(); }, "job-b's RankExited");
  CHECK(a->written.size() == writtenByA);  // the gone launcher's events are dropped
  for (const auto& e : b->frames()) {
    if (e.has_rank_started()) CHECK(e.rank_started().job_id() == "job-b");
    if (e.has_rank_exited()) CHECK(e.rank_exited().job_id() == "job-b");
  }
  CHECK(Agent::framesWhere(*b, isExited).size() == 1);
}

TEST_CASE("a peer that fails the handshake is refused before any frame is read", "[agent][session]") {
  Agent agent;
  auto wire = std::make_shared<FakeWire>();
  wire->handshakeFailure = "certificate verify failed";
  {
    Session::Timing timing;
    auto session = std::make_shared<Session>(9, std::make_unique<FakeConnection>(agent.io, wire), "intruder",
                                             agent.sessions, agent.table, agent.handler, timing);
    agent.sessions.start(session);
  }
  wire->send(hello());
  wire->send(launch("job-x", {"x.py"}));
  runUntil(agent.io, [&] { return wire->closed; }, "the connection to be closed");
  agent.io.poll();
  CHECK(wire->written.empty());
  CHECK(agent.spawner.spawned.empty());
  CHECK(agent.sessions.size() == 0);
}
