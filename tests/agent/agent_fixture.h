#pragma once
// The agent tests' fixture: an AgentServer on 127.0.0.1 with a fresh TLS directory, real /bin/sh
// ranks, and helpers to launch and collect a job. The test client and the agent share one
// io_context, stepped by the test thread.

#include <signal.h>

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent_server.h"
#include "supervision/posix_spawner.h"
#include "proto/rank_env.h"
#include "tests/agent/test_client.h"
#include "tests/common/temp_dir.h"
#include "tests/tls/test_pki.h"
#include "tls/ssl_context.h"
#include "tls/tls_directory.h"

namespace testing {

using namespace std::chrono_literals;
using dsrun::agent::AgentServer;

struct Fixture {
  Fixture() : Fixture(AgentServer::Options{}) {}
  explicit Fixture(AgentServer::Options options) {
    options.listen = {boost::asio::ip::make_address("127.0.0.1"), 0};
    options.hostName = "test-node";
    options.tlsDir = nodeDir;
    if (options.killGrace == 30000ms) options.killGrace = 2000ms;
    server = std::make_unique<AgentServer>(
        io, options, dsrun::tls::makeSslContext(nodeDir, dsrun::tls::Role::Server), spawner);
    server->start();
    clientCtx.emplace(dsrun::tls::makeSslContext(pki.launcher(), dsrun::tls::Role::Client));
  }

  /// A connected, welcomed client.
  std::unique_ptr<TestClient> welcomedClient(uint64_t outputWindow = 0, bool heartbeats = false) {
    auto c = std::make_unique<TestClient>(io, *clientCtx);
    REQUIRE_FALSE(c->connect(server->localEndpoint()));
    c->hello(dsrun::proto::kProtocolVersion, outputWindow, heartbeats);
    auto w = c->next();
    REQUIRE(w.has_value());
    REQUIRE(w->has_welcome());
    return c;
  }

  TempDir tmp;
  TestPki pki{tmp.path() + "/pki"};               ///< the launcher's directory and the agent's
  std::string nodeDir = pki.node("test-node");    ///< the agent's TLS directory
  boost::asio::io_context io;
  dsrun::PosixSpawner spawner;
  std::unique_ptr<AgentServer> server;
  std::optional<boost::asio::ssl::context> clientCtx;
};

inline Envelope launchSh(const std::string& jobId, const std::vector<std::string>& scripts) {
  Envelope e;
  auto* l = e.mutable_launch();
  l->set_job_id(jobId);
  for (size_t r = 0; r < scripts.size(); ++r) {
    auto* rank = l->add_ranks();
    rank->set_rank(static_cast<int>(r));
    rank->add_argv("/bin/sh");
    rank->add_argv("-c");
    rank->add_argv(scripts[r]);
    dsrun::proto::addEnv(*rank, "RANK", std::to_string(r));
    dsrun::proto::addEnv(*rank, "PATH", "/usr/bin:/bin");
  }
  return e;
}

/// Collects a job's events until every rank has exited.
struct JobResult {
  std::map<int, int> pid;
  std::map<int, std::string> out, err;
  std::map<int, dsrun::wire::RankExited> exited;
  std::vector<std::string> errors;
};

inline JobResult collect(TestClient& c, size_t ranks) {
  JobResult r;
  while (r.exited.size() < ranks) {
    auto e = c.next();
    REQUIRE(e.has_value());
    if (e->has_rank_started()) r.pid[e->rank_started().rank()] = e->rank_started().pid();
    if (e->has_output()) {
      (e->output().stream() == dsrun::wire::STDOUT ? r.out : r.err)[e->output().rank()] += e->output().data();
    }
    if (e->has_rank_exited()) r.exited[e->rank_exited().rank()] = e->rank_exited();
    if (e->has_error()) r.errors.push_back(e->error().message());
  }
  return r;
}

inline bool alive(int pid) { return ::kill(pid, 0) == 0; }


}  // namespace testing
