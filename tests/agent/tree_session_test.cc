// A Session serving tree launches, against a FakeConnection and a JobTable on a FakeSpawner: what a launcher
// or a parent agent may hand this node, and what it starts. The launches are signed as dsrun signs them.
#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <csignal>
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "agent/job_table.h"
#include "agent/request_handler.h"
#include "agent/session.h"
#include "agent/session_manager.h"
#include "agent/store_service.h"
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
  /// `stopTime`: the kill grace and the kill wait (with the edge's budget, they make an orphan's hold).
  explicit TreeAgent(const std::string& self, std::chrono::milliseconds stopTime = 10s)
      : nodeDir(pki.node(self)),
        table(io, spawner, sessions, tableOptions(self, stopTime)),
        handler({self, 10000, 4096, true}),
        gate(nodeDir, 4096),
        dial(dsrun::tls::makeSslContext(nodeDir, dsrun::tls::Role::TreeClient)),
        stores(std::make_unique<StoreService>(io, &dial, self)) {}
  ~TreeAgent() {
    sessions.stopAll("");
    io.poll();
  }
  static JobTable::Options tableOptions(const std::string& self, std::chrono::milliseconds stopTime) {
    JobTable::Options o;
    o.killGrace = stopTime;
    o.killWait = stopTime;
    o.drainAfterExit = std::min<std::chrono::milliseconds>(stopTime, o.drainAfterExit);
    o.hostName = self;
    return o;
  }

  /// A new connection from a peer holding a launcher certificate (`nodeHosts` empty) or a node certificate
  /// naming `nodeHosts`; welcomed.
  /// `silenceMs`: the budget the peer's Hello gives this edge (0: the session's own, 30 s here).
  /// `edgeSignals`: the peer announces TreeReattached (Hello.tree_edge_signals), as a current parent agent does;
  /// false: as an agent from before the typed signals (and dsrun) does.
  std::shared_ptr<FakeWire> connect(std::vector<std::string> nodeHosts = {}, uint32_t silenceMs = 0,
                                    bool edgeSignals = false) {
    auto wire = std::make_shared<FakeWire>();
    wire->peerNode = !nodeHosts.empty();
    wire->peerHosts = std::move(nodeHosts);
    auto session = std::make_shared<Session>(nextId, std::make_unique<FakeConnection>(io, wire),
                                             "peer-" + std::to_string(nextId), sessions, table, handler, timing,
                                             TreeServices{&gate, &dial, false, stores.get()});
    ++nextId;
    sessions.start(session);
    Envelope hello;
    hello.mutable_hello()->set_protocol_version(dsrun::proto::kProtocolVersion);
    hello.mutable_hello()->set_client_name("tree_session_test");
    hello.mutable_hello()->set_launcher_silence_ms(silenceMs);
    hello.mutable_hello()->set_tree_edge_signals(edgeSignals);
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
  std::unique_ptr<StoreService> stores;  ///< --rendezvous agent
  uint64_t nextId = 1;
  Session::Timing timing = [] {
    Session::Timing t;
    t.heartbeatPeriod = 10s;
    return t;
  }();  ///< each new session's
};

Envelope wrap(const dsrun::wire::TreeLaunch& launch) {
  Envelope e;
  *e.mutable_tree_launch() = launch;
  return e;
}

/// A connection-level Error from the peer.
Envelope parentError(const std::string& text) {
  Envelope e;
  e.mutable_error()->set_message(text);
  return e;
}

Envelope adoption(const dsrun::wire::TreeLaunch& launch) {
  Envelope e;
  *e.mutable_tree_adopt()->mutable_launch() = launch;
  return e;
}

/// tree-0 -> mid-1 -> leaf-2, one rank each: this agent is leaf-2, tree-0 its grandparent.
std::vector<testing::TreeTestNode> chain() {
  return {{"tree-0", "127.0.0.1", 29600, -1, 1}, {"mid-1", "127.0.0.1", 29601, 0, 1}, {"leaf-2", "127.0.0.1", 29602, 1, 1}};
}

/// signedRootLaunch with every rank's kill grace `graceS` (theirs: 2 s), which an orphan's hold includes.
dsrun::wire::TreeLaunch signedLaunchWithGrace(const dsrun::tls::TreeSigner& signer, const std::string& job,
                                              const std::vector<testing::TreeTestNode>& nodes, double graceS) {
  auto launchNodes = testing::treeNodes(job, nodes, kScript);
  for (auto& node : launchNodes) node.request.set_kill_grace_s(graceS);
  const auto content = dsrun::proto::buildTreeLaunch(launchNodes, {testing::nowUnixUs(), 300, 2, "agent tree test"},
                                                     testing::testSha());
  return dsrun::proto::rootTreeLaunch(content, 0, signer.sign(dsrun::proto::treeSignedMessage(content.root)),
                                      signer.certificateDer());
}

bool has(const FakeWire& wire, bool (Envelope::*what)() const) {
  for (const auto& e : wire.frames()) {
    if ((e.*what)()) return true;
    if (e.has_event_batch()) {
      for (const auto& inner : e.event_batch().events()) {
        if ((inner.*what)()) return true;
      }
    }
  }
  return false;
}

/// leaf-2 runs its rank of `job`, launched by mid-1, and mid-1's connection has dropped: the job is orphaned.
std::shared_ptr<FakeWire> orphanedLeaf(TreeAgent& agent, const dsrun::wire::TreeLaunch& root) {
  auto parent = agent.connect({"mid-1"});
  parent->send(wrap(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 1; }, "the leaf's rank");
  parent->hangUp();  // mid-1's agent died
  runUntil(agent.io, [&] { return parent->closed; }, "the session to notice its parent gone");
  return parent;
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

TEST_CASE("a probed tree launch is held: its report names the broken target, nothing starts before go, and only "
          "the connection that handed it over can send go",
          "[agent][tree][probe]") {
  TreeAgent agent("tree-0");
  auto wire = agent.connect();
  const std::vector<testing::TreeTestNode> alone{{"tree-0", "127.0.0.1", 29600, -1, 2}};
  // Port 1: nothing listens there, so the connection is refused at once.
  auto launch = wrap(testing::signedRootLaunch(agent.signer, "job-p", alone, kScript, 0, testing::nowUnixUs(),
                                               {{"127.0.0.1:1"}}));
  launch.mutable_tree_launch()->mutable_probe()->set_timeout_ms(2000);
  wire->send(launch);
  runUntil(agent.io, [&] {
    for (auto& e : wire->frames()) if (e.has_tree_probe_report()) return true;
    return false;
  }, "the probe report");
  dsrun::wire::TreeProbeReport report;
  for (auto& e : wire->frames()) if (e.has_tree_probe_report()) report = e.tree_probe_report();
  CHECK(report.job_id() == "job-p");
  CHECK(report.pairs() == 1);
  REQUIRE(report.broken_size() == 1);
  CHECK(report.broken(0).from() == "tree-0");
  CHECK(report.broken(0).target() == "127.0.0.1:1");
  CHECK(agent.spawner.spawned.empty());
  // Another launcher connection cannot start what this one handed over.
  auto other = agent.connect();
  Envelope go;
  go.mutable_tree_go()->set_job_id("job-p");
  other->send(go);
  CHECK_THAT(TreeAgent::errorOn(agent.io, *other).message(), Contains("tree go refused: job 'job-p' is not held here"));
  CHECK(agent.spawner.spawned.empty());
  wire->send(go);
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 2; }, "the two ranks after go");
  CHECK(agent.spawner.spawned[1].command.env.at("RANK") == "1");
}

TEST_CASE("an orphaned node is adopted by its grandparent: its running job is re-bound, nothing is started "
          "again, and its ranks are stoppable and reported through the adopter",
          "[agent][tree][adopt]") {
  TreeAgent agent("leaf-2");
  const auto root = testing::signedRootLaunch(agent.signer, "job-a", chain(), kScript);
  orphanedLeaf(agent, root);
  const pid_t pid = agent.spawner.spawned[0].pid;
  CHECK(agent.spawner.signalsTo(pid).empty());  // waiting for an adopter, not stopping
  // tree-0 lost mid-1 and re-fans: it sends leaf-2 the slice mid-1 would have sent.
  auto adopter = agent.connect({"tree-0"});
  adopter->send(adoption(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return has(*adopter, &Envelope::has_tree_adopted); }, "TreeAdopted");
  CHECK(agent.spawner.spawned.size() == 1);
  CHECK_FALSE(has(*adopter, &Envelope::has_error));
  Envelope interrupt;
  interrupt.mutable_signal()->set_job_id("job-a");
  interrupt.mutable_signal()->set_signal(SIGINT);
  adopter->send(interrupt);
  runUntil(agent.io, [&] { return !agent.spawner.signalsTo(pid).empty(); }, "the SIGINT through the adopter");
  CHECK(agent.spawner.signalsTo(pid).front() == SIGINT);
  agent.table.onReaped(pid, 0);
  runUntil(agent.io, [&] { return has(*adopter, &Envelope::has_rank_exited); }, "the rank's exit at the adopter");
}

TEST_CASE("an adoption or a launch of a job id this node ran is refused from anyone but a signed ancestor, and "
          "a finished job is not started again by an adoption",
          "[agent][tree][adopt][security]") {
  TreeAgent agent("leaf-2");
  const auto root = testing::signedRootLaunch(agent.signer, "job-x", chain(), kScript);
  auto parent = orphanedLeaf(agent, root);
  SECTION("an adoption from a node certificate that is no ancestor") {
    auto stranger = agent.connect({"tree-9"});
    stranger->send(adoption(testing::forwardedLaunch(root, "leaf-2")));
    CHECK_THAT(TreeAgent::errorOn(agent.io, *stranger).message(),
               Contains("adoption") && Contains("names mid-1 as leaf-2's parent (or an ancestor), and the peer is not it"));
    runUntil(agent.io, [&] { return stranger->closed; }, "the stranger to be cut off");
    CHECK_FALSE(has(*stranger, &Envelope::has_tree_adopted));
  }
  SECTION("the same launch replayed by a node certificate that is no ancestor") {
    auto stranger = agent.connect({"tree-9"});
    stranger->send(wrap(testing::forwardedLaunch(root, "leaf-2")));
    CHECK_THAT(TreeAgent::errorOn(agent.io, *stranger).message(), Contains("and the peer is not it"));
  }
  SECTION("the same launch replayed by the grandparent as a launch rather than an adoption") {
    auto grandparent = agent.connect({"tree-0"});
    grandparent->send(wrap(testing::forwardedLaunch(root, "leaf-2")));
    CHECK_THAT(TreeAgent::errorOn(agent.io, *grandparent).message(), Contains("names mid-1 as leaf-2's parent"));
  }
  agent.io.poll();
  CHECK(agent.spawner.spawned.size() == 1);
}

TEST_CASE("an orphan that gave up waiting still hands its stopped rank's end to an adopter that comes late, and "
          "starts nothing again",
          "[agent][tree][adopt]") {
  TreeAgent agent("leaf-2");  // held 10 s + 10 s + 2 x 60 ms + 10 s after it gives up
  const auto root = testing::signedRootLaunch(agent.signer, "job-h", chain(), kScript);
  auto parent = agent.connect({"mid-1"}, 60);  // lost after 60 ms of silence, given up 120 ms later
  parent->send(wrap(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 1; }, "the leaf's rank");
  const pid_t pid = agent.spawner.spawned[0].pid;
  runUntil(agent.io, [&] { return !agent.spawner.signalsTo(pid).empty(); }, "the orphan to give up");
  agent.table.onReaped(pid, SIGTERM);
  runUntil(agent.io, [&] { return agent.table.jobIds().empty(); }, "the job to end");
  CHECK(agent.sessions.size() == 1);  // kept for a late adopter, with the end
  auto grandparent = agent.connect({"tree-0"});
  grandparent->send(adoption(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return has(*grandparent, &Envelope::has_rank_exited); }, "the held end at the adopter");
  CHECK(has(*grandparent, &Envelope::has_tree_adopted));
  CHECK_FALSE(has(*grandparent, &Envelope::has_error));
  CHECK(agent.spawner.spawned.size() == 1);
}

TEST_CASE("once an orphan's hold has passed too, an adoption of its job is refused as a replay and starts nothing",
          "[agent][tree][adopt][security]") {
  TreeAgent agent("leaf-2", 50ms);  // held 50 + 50 + 2 x 60 + 100 ms after it gives up
  agent.timing.handshakeTimeout = 100ms;
  const auto root = signedLaunchWithGrace(agent.signer, "job-y", chain(), 0.05);
  auto parent = agent.connect({"mid-1"}, 60);  // lost after 60 ms of silence, given up 120 ms later
  parent->send(wrap(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 1; }, "the leaf's rank");
  const pid_t pid = agent.spawner.spawned[0].pid;
  runUntil(agent.io, [&] { return !agent.spawner.signalsTo(pid).empty(); }, "the orphan to give up");
  agent.table.onReaped(pid, SIGTERM);
  runUntil(agent.io, [&] { return agent.table.jobIds().empty() && agent.sessions.size() == 0; },
           "the job to end and its hold to pass");
  auto grandparent = agent.connect({"tree-0"});
  grandparent->send(adoption(testing::forwardedLaunch(root, "leaf-2")));
  CHECK_THAT(TreeAgent::errorOn(agent.io, *grandparent).message(), Contains("already ran that job id (a replay)"));
  agent.io.poll();
  CHECK(agent.spawner.spawned.size() == 1);
}

TEST_CASE("a rank that ends while its node waits for an adopter is reported to the adopter",
          "[agent][tree][adopt]") {
  TreeAgent agent("leaf-2");
  const auto root = testing::signedRootLaunch(agent.signer, "job-w", chain(), kScript);
  orphanedLeaf(agent, root);
  agent.table.onReaped(agent.spawner.spawned[0].pid, 0);
  runUntil(agent.io, [&] { return agent.table.jobIds().empty(); }, "the job's last rank to end");
  auto adopter = agent.connect({"tree-0"});
  adopter->send(adoption(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return has(*adopter, &Envelope::has_rank_exited); }, "the held exit at the adopter");
  CHECK(has(*adopter, &Envelope::has_tree_adopted));
  CHECK(agent.spawner.spawned.size() == 1);
}

TEST_CASE("a node whose parent died before forwarding its launch starts it from the ancestor that adopts it",
          "[agent][tree][adopt]") {
  TreeAgent agent("leaf-2");
  const auto root = testing::signedRootLaunch(agent.signer, "job-m", chain(), kScript);
  auto grandparent = agent.connect({"tree-0"});
  grandparent->send(adoption(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 1; }, "the leaf's rank");
  CHECK(agent.spawner.spawned[0].command.env.at("RANK") == "2");
  runUntil(agent.io, [&] { return has(*grandparent, &Envelope::has_tree_adopted); }, "TreeAdopted");
}

TEST_CASE("an orphan that no ancestor adopts within its wait stops its ranks", "[agent][tree][adopt]") {
  TreeAgent agent("leaf-2");
  const auto root = testing::signedRootLaunch(agent.signer, "job-o", chain(), kScript);
  // mid-1 gives this edge a 60 ms budget and then says nothing: lost after 60 ms, abandoned 120 ms later.
  auto parent = agent.connect({"mid-1"}, 60);
  parent->send(wrap(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 1; }, "the leaf's rank");
  const pid_t pid = agent.spawner.spawned[0].pid;
  runUntil(agent.io, [&] { return parent->closed; }, "the silent parent to be given up");
  CHECK(agent.spawner.signalsTo(pid).empty());  // the wait has begun
  CHECK(agent.sessions.size() == 1);
  runUntil(agent.io, [&] { return !agent.spawner.signalsTo(pid).empty(); }, "the orphan to stop its rank");
  CHECK(agent.spawner.signalsTo(pid).front() == SIGTERM);
  CHECK(agent.sessions.size() == 1);  // what the rank reports is kept for a late adopter, for the hold
}

TEST_CASE("a node its parent releases stops at once, without waiting for an adopter", "[agent][tree][adopt]") {
  TreeAgent agent("leaf-2");
  const auto root = testing::signedRootLaunch(agent.signer, "job-r", chain(), kScript);
  auto parent = agent.connect({"mid-1"});
  parent->send(wrap(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 1; }, "the leaf's rank");
  Envelope released;
  released.mutable_error()->set_message("released: job job-r ends here, nobody adopts it");
  parent->send(released);
  const pid_t pid = agent.spawner.spawned[0].pid;
  runUntil(agent.io, [&] { return !agent.spawner.signalsTo(pid).empty(); }, "the rank to be stopped");
  CHECK(agent.spawner.signalsTo(pid).front() == SIGTERM);
}

TEST_CASE("a node its parent releases with TreeReleased stops at once, without waiting for an adopter",
          "[agent][tree][adopt][edge]") {
  TreeAgent agent("leaf-2");
  const auto root = testing::signedRootLaunch(agent.signer, "job-t", chain(), kScript);
  auto parent = agent.connect({"mid-1"}, 0, /*edgeSignals=*/true);
  // The Welcome says the typed signals are understood here, so a parent sends them.
  runUntil(agent.io, [&] { return has(*parent, &Envelope::has_welcome); }, "Welcome");
  CHECK(parent->frames()[0].welcome().tree_edge_signals());
  parent->send(wrap(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 1; }, "the leaf's rank");
  Envelope released;
  released.mutable_tree_released()->set_job_id("job-t");
  parent->send(released);
  // The orphan's wait would be 2 x 30 s here: stopped within the guard means it did not wait.
  const pid_t pid = agent.spawner.spawned[0].pid;
  runUntil(agent.io, [&] { return !agent.spawner.signalsTo(pid).empty(); }, "the rank to be stopped");
  CHECK(agent.spawner.signalsTo(pid).front() == SIGTERM);
  CHECK(parent->closed);
  CHECK_FALSE(has(*parent, &Envelope::has_error));
}

TEST_CASE("from a parent that announced the typed signals, an Error worded like an older agent's release is an "
          "error: the node waits for an adopter",
          "[agent][tree][adopt][edge]") {
  TreeAgent agent("leaf-2");
  const auto root = testing::signedRootLaunch(agent.signer, "job-w", chain(), kScript);
  auto parent = agent.connect({"mid-1"}, 0, /*edgeSignals=*/true);
  parent->send(wrap(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 1; }, "the leaf's rank");
  parent->send(parentError("released: job job-w ends here, nobody adopts it"));
  runUntil(agent.io, [&] { return parent->closed; }, "the connection closed");
  CHECK(agent.spawner.signalsTo(agent.spawner.spawned[0].pid).empty());  // waiting, not stopped
  CHECK(agent.sessions.size() == 1);
}

TEST_CASE("an adopted node passes up again the ends it had passed to its lost parent, which may have died with "
          "them",
          "[agent][tree][adopt]") {
  TreeAgent agent("leaf-2");
  std::vector<testing::TreeTestNode> nodes = chain();
  nodes[2].ranks = 2;  // ranks 2 and 3
  const auto root = testing::signedRootLaunch(agent.signer, "job-e", nodes, kScript);
  auto parent = agent.connect({"mid-1"});
  parent->send(wrap(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 2; }, "the leaf's ranks");
  agent.table.onReaped(agent.spawner.spawned[0].pid, 0);  // rank 2 ends; its exit goes to mid-1
  runUntil(agent.io, [&] { return has(*parent, &Envelope::has_rank_exited); }, "rank 2's exit at mid-1");
  parent->hangUp();  // mid-1 dies, maybe before passing it on
  runUntil(agent.io, [&] { return parent->closed; }, "the session to notice its parent gone");
  auto adopter = agent.connect({"tree-0"});
  adopter->send(adoption(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return has(*adopter, &Envelope::has_rank_exited); }, "rank 2's exit again, at tree-0");
  CHECK(has(*adopter, &Envelope::has_tree_adopted));
  CHECK(agent.spawner.spawned.size() == 2);
}

TEST_CASE("a node adopted while its parent is still connected tells that parent, which then neither reports it "
          "lost nor re-fans below it, and keeps its ranks",
          "[agent][tree][adopt]") {
  TreeAgent agent("leaf-2");
  const auto root = testing::signedRootLaunch(agent.signer, "job-l", chain(), kScript);
  auto parent = agent.connect({"mid-1"});  // mid-1 is alive, but its own parent gave it up
  parent->send(wrap(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 1; }, "the leaf's rank");
  auto adopter = agent.connect({"tree-0"});
  adopter->send(adoption(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return has(*adopter, &Envelope::has_tree_adopted) && parent->closed; },
           "TreeAdopted, and the old parent's connection closed");
  CHECK_THAT(TreeAgent::errorOn(agent.io, *parent).message(), Contains("adopted: job job-l re-attached"));
  CHECK(agent.spawner.signalsTo(agent.spawner.spawned[0].pid).empty());
  CHECK(agent.table.jobIds().count("job-l") == 1);
}

TEST_CASE("a node orphaned before its own ranks' turn keeps them for its adopter, which starts them",
          "[agent][tree][adopt]") {
  TreeAgent agent("mid-1");
  // mid-1's child takes the TCP connection and never answers: mid-1's own rank waits for its bounded turn.
  boost::asio::ip::tcp::acceptor silent(agent.io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const std::vector<testing::TreeTestNode> nodes{{"tree-0", "127.0.0.1", 29600, -1, 1},
                                                 {"mid-1", "127.0.0.1", 29601, 0, 1},
                                                 {"leaf-2", "127.0.0.1", silent.local_endpoint().port(), 1, 1}};
  const auto root = testing::signedRootLaunch(agent.signer, "job-p", nodes, kScript);
  auto parent = agent.connect({"tree-0"});
  parent->send(wrap(testing::forwardedLaunch(root, "mid-1")));
  runUntil(agent.io, [&] { return agent.sessions.treeCarrier("job-p") != nullptr; }, "the launch admitted");
  parent->hangUp();  // tree-0's agent died before mid-1's rank had its turn
  runUntil(agent.io, [&] { return parent->closed; }, "the session to notice its parent gone");
  // Past the turn (Session's 2 s wait for the children): dropped here before, the rank never started.
  const auto until = std::chrono::steady_clock::now() + 2500ms;
  runUntil(agent.io, [&] { return std::chrono::steady_clock::now() > until; }, "the own ranks' turn to pass");
  CHECK(agent.spawner.spawned.empty());  // not while nobody supervises it
  auto launcher = agent.connect();  // dsrun adopts a lost root's children
  launcher->send(adoption(testing::forwardedLaunch(root, "mid-1")));
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 1; }, "mid-1's rank, started by its adopter");
  CHECK(agent.spawner.spawned[0].command.env.at("RANK") == "1");
  CHECK(has(*launcher, &Envelope::has_tree_adopted));
}

TEST_CASE("a node adopted while a parent that announced the typed signals is still connected tells it with "
          "TreeReattached, not an Error",
          "[agent][tree][adopt][edge]") {
  TreeAgent agent("leaf-2");
  const auto root = testing::signedRootLaunch(agent.signer, "job-k", chain(), kScript);
  auto parent = agent.connect({"mid-1"}, 0, /*edgeSignals=*/true);
  parent->send(wrap(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 1; }, "the leaf's rank");
  auto adopter = agent.connect({"tree-0"});
  adopter->send(adoption(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return has(*adopter, &Envelope::has_tree_adopted) && parent->closed; },
           "TreeAdopted, and the old parent's connection closed");
  bool told = false;
  for (const auto& e : parent->frames()) {
    if (e.has_tree_reattached()) told = e.tree_reattached().job_id() == "job-k";
  }
  CHECK(told);
  CHECK_FALSE(has(*parent, &Envelope::has_error));
  CHECK(agent.spawner.signalsTo(agent.spawner.spawned[0].pid).empty());
}

namespace {

/// A launch with --rendezvous agent: tree-0 (rank 0's node) holds the job's keys.
dsrun::wire::TreeLaunch signedStoreLaunch(const dsrun::tls::TreeSigner& signer, const std::string& job,
                                          const std::vector<testing::TreeTestNode>& nodes, const std::string& scope) {
  auto launchNodes = testing::treeNodes(job, nodes, kScript);
  for (auto& node : launchNodes) {
    auto* rendezvous = node.request.mutable_rendezvous();
    rendezvous->set_root_host("tree-0");
    rendezvous->set_root_address("127.0.0.1");
    rendezvous->set_root_port(29600);
    rendezvous->set_scope(scope);
  }
  const auto content = dsrun::proto::buildTreeLaunch(launchNodes, {testing::nowUnixUs(), 300, 2, "agent tree test"},
                                                     testing::testSha());
  return dsrun::proto::rootTreeLaunch(content, 0, signer.sign(dsrun::proto::treeSignedMessage(content.root)),
                                      signer.certificateDer());
}

/// A rank's connection to its agent's store, speaking torch 1.13's TCPStore protocol (agent/store_wire.h).
struct RankStore {
  RankStore(boost::asio::io_context& io, uint16_t port) : io(io), socket(io) {
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  }
  void send(uint8_t query, const std::string& key, const std::string* delta8 = nullptr) {
    std::string out(1, static_cast<char>(query));
    const uint64_t n = key.size();
    out.append(reinterpret_cast<const char*>(&n), sizeof n).append(key);
    if (delta8) out += *delta8;
    boost::asio::write(socket, boost::asio::buffer(out));
  }
  void add(const std::string& key, int64_t delta) {
    const std::string d(reinterpret_cast<const char*>(&delta), sizeof delta);
    send(3, key, &d);
  }
  void get(const std::string& key) { send(2, key); }
  /// The next `n` bytes of the answer, stepping the agent's loop until they are there.
  std::string read(size_t n) {
    runUntil(io, [&] { return socket.available() >= n; }, "the store's answer to the rank");
    std::string in(n, '\0');
    boost::asio::read(socket, boost::asio::buffer(in.data(), n));
    return in;
  }
  boost::asio::io_context& io;
  boost::asio::ip::tcp::socket socket;
};

/// The StoreRequests a peer got, batches opened.
std::vector<dsrun::wire::StoreRequest> storeRequests(const FakeWire& wire) {
  std::vector<dsrun::wire::StoreRequest> out;
  for (const auto& e : wire.frames()) {
    if (e.has_store_request()) out.push_back(e.store_request());
  }
  return out;
}

}  // namespace

TEST_CASE("a rank's store requests in flight through a parent that dies are sent again to the ancestor that "
          "adopts the node, with the same identity, and their answers reach the rank",
          "[agent][tree][adopt][store]") {
  TreeAgent agent("leaf-2");
  const auto root = signedStoreLaunch(agent.signer, "job-s", chain(), "scope-of-job-s!!");
  auto parent = agent.connect({"mid-1"}, 0, true);
  parent->send(wrap(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return agent.spawner.spawned.size() == 1; }, "the leaf's rank");
  const auto port = static_cast<uint16_t>(std::stoi(agent.spawner.spawned[0].command.env.at("MASTER_PORT")));
  RankStore adder(agent.io, port), getter(agent.io, port);
  adder.add("init/", 1);
  getter.get("nccl/0");
  runUntil(agent.io, [&] { return storeRequests(*parent).size() == 2; }, "the ADD and the FETCH at mid-1");
  const auto sent = storeRequests(*parent);
  parent->hangUp();  // mid-1 dies with both unanswered
  runUntil(agent.io, [&] { return parent->closed; }, "the session to notice its parent gone");
  auto adopter = agent.connect({"tree-0"}, 0, true);
  adopter->send(adoption(testing::forwardedLaunch(root, "leaf-2")));
  runUntil(agent.io, [&] { return storeRequests(*adopter).size() == 2; }, "both sent again to tree-0");
  const auto again = storeRequests(*adopter);
  for (size_t i = 0; i < 2; ++i) {
    INFO("request " << i);
    CHECK(again[i].op() == sent[i].op());
    CHECK(again[i].id() == sent[i].id());
    CHECK(again[i].write().origin() == sent[i].write().origin());
    CHECK(again[i].write().seq() == sent[i].write().seq());
    CHECK(again[i].scope() == "scope-of-job-s!!");
  }
  const auto& add = again[0].op() == dsrun::wire::STORE_ADD ? again[0] : again[1];
  const auto& fetch = again[0].op() == dsrun::wire::STORE_ADD ? again[1] : again[0];
  CHECK(add.write().origin().size() == 8);  // drawn by the leaf's store
  REQUIRE(add.parts_size() == 1);
  CHECK(add.parts(0).delta() == 1);
  // tree-0 answers (as it would from what mid-1's sum had already brought it): the ranks get their answers.
  Envelope reply;
  reply.mutable_store_reply()->set_job_id("job-s");
  reply.mutable_store_reply()->set_id(add.id());
  reply.mutable_store_reply()->set_number(8);
  adopter->send(reply);
  reply.mutable_store_reply()->set_id(fetch.id());
  reply.mutable_store_reply()->set_number(0);
  reply.mutable_store_reply()->add_values("the-nccl-id");
  adopter->send(reply);
  const std::string added = adder.read(8);
  int64_t value = 0;
  std::memcpy(&value, added.data(), sizeof value);
  CHECK(value == 8);
  const std::string length = getter.read(8);
  uint64_t n = 0;
  std::memcpy(&n, length.data(), sizeof n);
  REQUIRE(n == 11);
  CHECK(getter.read(n) == "the-nccl-id");
}
