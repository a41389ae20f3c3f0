// A Session serving tree launches, against a FakeConnection and a JobTable on a FakeSpawner: what a launcher
// or a parent agent may hand this node, and what it starts. The launches are signed as dsrun signs them.
#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "agent/job_table.h"
#include "agent/request_handler.h"
#include "agent/session.h"
#include "agent/session_manager.h"
#include "agent/tree_gate.h"
#include "proto/protocol.h"
#include "proto/rank_env.h"
#include "tests/agent/fake_connection.h"
#include "tests/agent/run_until.h"
#include "tests/agent/tree_launches.h"
#include "tests/common/temp_dir.h"
#include "tests/supervision/fake_spawner.h"
#include "tests/tls/test_pki.h"
#include "tls/ssl_context.h"

using Catch::Matchers::Contains;
using dsrun::wire::Envelope;
using namespace dsrun::agent;
using testing::FakeConnection;
using testing::FakeWire;
using testing::runUntil;
using namespace std::chrono_literals;

namespace {

const std::string kScript = "echo rank=$RANK";

/// tree-0 -> leaf-1: this agent is `self` ("tree-0" or "leaf-1").
std::vector<testing::TreeTestNode> twoNodes() {
  return {{"tree-0", "127.0.0.1", 29600, -1, 2}, {"leaf-1", "127.0.0.1", 29601, 0, 1}};
}

struct TreeAgent {
  explicit TreeAgent(const std::string& self)
      : nodeDir(pki.node(self)),
        table(io, spawner, sessions, tableOptions(self)),
        handler({self, 10000, 4096, true}),
        gate(nodeDir, 4096),
        dial(dsrun::tls::makeSslContext(nodeDir, dsrun::tls::Role::TreeClient)) {}
  ~TreeAgent() {
    sessions.stopAll("");
    io.poll();
  }
  static JobTable::Options tableOptions(const std::string& self) {
    JobTable::Options o;
    o.killGrace = 10s;
    o.hostName = self;
    return o;
  }

  /// A new connection from a peer holding a launcher certificate (`nodeHosts` empty) or a node certificate
  /// naming `nodeHosts`; welcomed.
  std::shared_ptr<FakeWire> connect(std::vector<std::string> nodeHosts = {}) {
    auto wire = std::make_shared<FakeWire>();
    wire->peerNode = !nodeHosts.empty();
    wire->peerHosts = std::move(nodeHosts);
    Session::Timing timing;
    timing.heartbeatPeriod = 10s;
    auto session = std::make_shared<Session>(nextId, std::make_unique<FakeConnection>(io, wire),
                                             "peer-" + std::to_string(nextId), sessions, table, handler, timing,
                                             TreeServices{&gate, &dial});
    ++nextId;
    sessions.start(session);
    Envelope hello;
    hello.mutable_hello()->set_protocol_version(dsrun::proto::kProtocolVersion);
    hello.mutable_hello()->set_client_name("tree_session_test");
    wire->send(hello);
    return wire;
  }

  /// The job-scoped or connection Error the peer got (steps until one arrives).
  static dsrun::wire::Error errorOn(boost::asio::io_context& io, FakeWire& wire) {
    runUntil(io, [&] {
      for (auto& e : wire.frames()) if (e.has_error()) return true;
      return false;
    }, "an Error");
    for (auto& e : wire.frames()) if (e.has_error()) return e.error();
    return {};
  }

  TempDir tmp;
  testing::TestPki pki{tmp.path() + "/pki"};
  dsrun::tls::TreeSigner signer{pki.launcher()};
  std::string nodeDir;
  boost::asio::io_context io;
  dsrun::FakeSpawner spawner;
  SessionManager sessions;
  JobTable table;
  RequestHandler handler;
  TreeGate gate;
  boost::asio::ssl::context dial;
  uint64_t nextId = 1;
};

Envelope wrap(const dsrun::wire::TreeLaunch& launch) {
  Envelope e;
  *e.mutable_tree_launch() = launch;
  return e;
}

}  // namespace

TEST_CASE("a root starts the ranks of a tree launch its launcher signed, as the star launch would, and reports "
          "them in one batch",
          "[agent][tree]") {
  TreeAgent agent("tree-0");
  auto wire = agent.connect();
  // A root without children: nothing to dial, only its own two ranks.
  const std::vector<testing::TreeTestNode> alone{{"tree-0", "127.0.0.1", 29600, -1, 2}};
  wire->send(wrap(testing::signedRootLaunch(agent.signer, "job-t", alone, kScript)));
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 2; }, "two ranks");
  const auto expected = testing::treeNodes("job-t", alone, kScript)[0].request;
  for (int r = 0; r < 2; ++r) {
    const auto& command = agent.spawner.spawned[static_cast<size_t>(r)].command;
    CHECK(command.argv == std::vector<std::string>(expected.ranks(r).argv().begin(), expected.ranks(r).argv().end()));
    CHECK(command.env.at("RANK") == std::to_string(r));
    CHECK(command.env.at("LOCAL_RANK") == std::to_string(r));
    CHECK(command.env.at("TREE_NODE") == "tree-0");
  }
  runUntil(agent.io, [&] {
    for (auto& e : wire->frames()) if (e.has_event_batch()) return true;
    return false;
  }, "an EventBatch");
  const auto frames = wire->frames();
  REQUIRE(frames[0].has_welcome());
  CHECK(frames[0].welcome().tree_launch());
  const Envelope& batch = frames[1];
  REQUIRE(batch.has_event_batch());
  REQUIRE(batch.event_batch().events_size() == 2);
  CHECK(batch.event_batch().events(0).rank_started().rank() == 0);
  CHECK(batch.event_batch().events(1).rank_started().rank() == 1);
  CHECK_FALSE(wire->closed);
}

TEST_CASE("a node forks its own ranks once its children have their launches or after a bounded wait, and a "
          "signal asked for meanwhile reaches them once",
          "[agent][tree]") {
  TreeAgent agent("tree-0");
  // The child's address takes the TCP connection and never answers the TLS handshake: the parent's own ranks
  // start after its bounded wait (Session::startTree), not after the child's 10 s connect timeout.
  boost::asio::ip::tcp::acceptor silent(agent.io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const auto port = silent.local_endpoint().port();
  const std::vector<testing::TreeTestNode> nodes{{"tree-0", "127.0.0.1", 29600, -1, 2},
                                                 {"leaf-1", "127.0.0.1", port, 0, 1}};
  auto wire = agent.connect();
  wire->send(wrap(testing::signedRootLaunch(agent.signer, "job-w", nodes, kScript)));
  Envelope interrupt;
  interrupt.mutable_signal()->set_job_id("job-w");
  interrupt.mutable_signal()->set_signal(SIGINT);
  wire->send(interrupt);
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 2; }, "the node's own two ranks");
  for (const auto& e : wire->frames()) CHECK_FALSE(e.has_error());  // the signal was taken for the waiting job
  for (const auto& rank : agent.spawner.spawned) CHECK(agent.spawner.signalsTo(rank.pid) == std::vector<int>{SIGINT});
}

TEST_CASE("a child accepts its launch from the parent agent the signed launch names", "[agent][tree]") {
  TreeAgent agent("leaf-1");
  auto wire = agent.connect({"tree-0"});
  const auto root = testing::signedRootLaunch(agent.signer, "job-c", twoNodes(), kScript);
  wire->send(wrap(testing::forwardedLaunch(root, "leaf-1")));
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 1; }, "the leaf's rank");
  CHECK(agent.spawner.spawned[0].command.env.at("RANK") == "2");
  CHECK(agent.spawner.spawned[0].command.env.at("TREE_NODE") == "leaf-1");
}

TEST_CASE("a tree launch from anyone but the named parent is refused, naming the peer, and starts nothing",
          "[agent][tree][security]") {
  TreeAgent agent("leaf-1");
  const auto root = testing::signedRootLaunch(agent.signer, "job-w", twoNodes(), kScript);
  SECTION("another node's certificate") {
    auto wire = agent.connect({"tree-9"});
    wire->send(wrap(testing::forwardedLaunch(root, "leaf-1")));
    const auto error = TreeAgent::errorOn(agent.io, *wire);
    CHECK(error.job_id() == "job-w");
    CHECK_THAT(error.message(), Contains("tree launch refused") && Contains("peer-1") &&
                                    Contains("names tree-0 as leaf-1's parent, and the peer is not it"));
    runUntil(agent.io, [&] { return wire->closed; }, "the node peer to be cut off");
  }
  SECTION("a launcher's certificate, for a node that is not a root") {
    auto wire = agent.connect();
    wire->send(wrap(testing::forwardedLaunch(root, "leaf-1")));
    CHECK_THAT(TreeAgent::errorOn(agent.io, *wire).message(), Contains("names tree-0 as leaf-1's parent"));
  }
  SECTION("the parent, handing over a launch meant for another node") {
    auto wire = agent.connect({"tree-0"});
    wire->send(wrap(root));
    CHECK_THAT(TreeAgent::errorOn(agent.io, *wire).message(), Contains("it is for host 'tree-0'"));
  }
  agent.io.poll();
  CHECK(agent.spawner.spawned.empty());
}

TEST_CASE("a node certificate can send nothing but a tree launch", "[agent][tree][security]") {
  TreeAgent agent("leaf-1");
  auto wire = agent.connect({"tree-0"});
  Envelope star;
  star.mutable_launch()->set_job_id("job-star");
  auto* rank = star.mutable_launch()->add_ranks();
  rank->add_argv("/bin/true");
  wire->send(star);
  CHECK_THAT(TreeAgent::errorOn(agent.io, *wire).message(),
             Contains("a node certificate may only send a tree launch") && Contains("got launch"));
  runUntil(agent.io, [&] { return wire->closed; }, "the node peer to be cut off");
  CHECK(agent.spawner.spawned.empty());
}

TEST_CASE("a changed byte, a replayed launch or a stale one is refused", "[agent][tree][security]") {
  TreeAgent agent("tree-0");
  const std::vector<testing::TreeTestNode> alone{{"tree-0", "127.0.0.1", 29600, -1, 1}};
  SECTION("a rank's command changed on the way") {
    auto launch = testing::signedRootLaunch(agent.signer, "job-f", alone, kScript);
    dsrun::wire::TreeNodePart part;
    REQUIRE(part.ParseFromString(launch.subtree(0).part()));
    part.mutable_ranks(0)->set_cwd("/tmp/evil");
    part.mutable_ranks(0)->set_cwd_replaced(true);
    launch.mutable_subtree(0)->set_part(part.SerializeAsString());
    auto wire = agent.connect();
    wire->send(wrap(launch));
    CHECK_THAT(TreeAgent::errorOn(agent.io, *wire).message(), Contains("tree launch refused"));
    agent.io.poll();
    CHECK(agent.spawner.spawned.empty());
  }
  SECTION("the same launch twice") {
    const auto launch = testing::signedRootLaunch(agent.signer, "job-r", alone, kScript);
    auto first = agent.connect();
    first->send(wrap(launch));
    runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 1; }, "the first launch");
    auto second = agent.connect();
    second->send(wrap(launch));
    CHECK_THAT(TreeAgent::errorOn(agent.io, *second).message(), Contains("replay"));
    agent.io.poll();
    CHECK(agent.spawner.spawned.size() == 1);
  }
  SECTION("signed an hour ago") {
    auto wire = agent.connect();
    wire->send(wrap(testing::signedRootLaunch(agent.signer, "job-o", alone, kScript, 0,
                                              testing::nowUnixUs() - 3600LL * 1000000)));
    CHECK_THAT(TreeAgent::errorOn(agent.io, *wire).message(), Contains("outside its 300 s window"));
    agent.io.poll();
    CHECK(agent.spawner.spawned.empty());
  }
}
