// Real dsrun-agent processes on 127.0.0.1 in a 3-level tree of width 2, driven by a test launcher over mutual
// TLS with a launch signed as dsrun signs it: tree-0 has the children tree-1 and tree-4, tree-1 has tree-2 and
// tree-3.
// Each node runs 2 ranks of /bin/sh (global ranks 0-1 on tree-0, 2-3 on tree-1, ... 8-9 on tree-4).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "agent/tree_relay.h"
#include "tests/agent/test_client.h"
#include "tests/agent/tree_launches.h"
#include "tests/common/temp_dir.h"
#include "tests/tls/test_pki.h"
#include "tls/ssl_context.h"

using Catch::Matchers::Contains;
using dsrun::wire::Envelope;
using namespace std::chrono_literals;

namespace {

/// Polls `done` every 20 ms for at most `limit` (a wait with a generous bound, not a timing assertion).
bool waitFor(const std::function<bool()>& done, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool gone(int pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

/// One dsrun-agent process; SIGTERM (then SIGKILL) and reaped when destroyed.
class AgentProcess {
 public:
  /// `straggler`: the agent admits tree launches and then ignores them (its hidden test option).
  AgentProcess(const std::string& tlsDir, const std::string& logDir, bool straggler = false) : logDir_(logDir) {
    ::mkdir(logDir.c_str(), 0755);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      const char* argv[] = {DSRUN_AGENT_BIN, "--listen", "127.0.0.1:0", "--tls_dir", tlsDir.c_str(), "--log_dir",
                            logDir.c_str(), "--heartbeat_timeout_s", "30", "--kill_grace_s", "2",
                            straggler ? "--test_hold_tree_launches" : nullptr, nullptr};
      ::execv(argv[0], const_cast<char* const*>(argv));
      ::_exit(127);
    }
    const std::regex listening("listening on 127\\.0\\.0\\.1:([0-9]+)");
    std::smatch m;
    const bool up = waitFor([&] {
      const std::string log = this->log();
      if (!std::regex_search(log, m, listening)) return false;
      port_ = static_cast<uint32_t>(std::stoul(m[1]));
      return true;
    }, 30s);
    INFO(log());
    REQUIRE(up);
  }
  ~AgentProcess() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    if (!waitFor([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, 15s)) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
  }
  /// SIGSTOP / SIGCONT: a hung host (its sockets stay open and silent).
  void pause() { ::kill(pid_, SIGSTOP); }
  void resume() { ::kill(pid_, SIGCONT); }
  void kill9() {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  uint32_t port() const { return port_; }
  std::string log() const { return readFile(logDir_ + "/dsrun-agent.log"); }

 private:
  std::string logDir_;
  int pid_ = -1;
  uint32_t port_ = 0;
};

/// The launcher's view of a job's events, batches opened; output credit returned as it is read.
struct Events {
  std::map<int, int> pid;
  std::map<int, std::string> out;
  std::map<int, dsrun::wire::RankExited> exited;
  std::vector<dsrun::wire::NodeLost> lost;
  std::vector<std::string> errors;
  bool adopted = false;          ///< TreeAdopted arrived (this client adopted a node)
  bool credit = true;            ///< return output credit as output is read (a launcher whose reader keeps up)
  uint64_t uncredited = 0;       ///< output read while `credit` was off

  void take(testing::TestClient& client, const Envelope& e) {
    if (e.has_event_batch()) {
      for (const auto& inner : e.event_batch().events()) take(client, inner);
      return;
    }
    if (e.has_rank_started()) pid[e.rank_started().rank()] = e.rank_started().pid();
    if (e.has_output()) {
      out[e.output().rank()] += e.output().data();
      if (credit) {
        Envelope back;
        back.mutable_output_credit()->set_bytes(e.output().data().size());
        client.send(back);
      } else {
        uncredited += e.output().data().size();
      }
    }
    if (e.has_rank_exited()) exited[e.rank_exited().rank()] = e.rank_exited();
    if (e.has_node_lost()) lost.push_back(e.node_lost());
    if (e.has_error()) errors.push_back(e.error().message());
    if (e.has_tree_adopted()) adopted = true;
  }
  /// Reads until `done`; fails if the connection closes first.
  void until(testing::TestClient& client, const std::function<bool()>& done, const char* what) {
    INFO("so far: " << summary());
    while (!done()) {
      auto e = client.next();
      if (!e) FAIL("the root closed the connection while waiting for " << what);
      take(client, *e);
    }
  }
  /// For failure messages: what each rank said and how it ended.
  std::string summary() const {
    std::ostringstream s;
    for (const auto& [rank, data] : out) s << "[rank " << rank << ": " << data << "] ";
    for (const auto& [rank, e] : exited) s << "[rank " << rank << " exited " << e.exit_code() << "/" << e.signal() << "] ";
    for (const auto& e : errors) s << "[error " << e << "] ";
    for (const auto& l : lost) s << "[lost " << l.host() << ": " << l.cause() << "] ";
    return s.str();
  }
  size_t linesContaining(const std::string& text) const {
    size_t n = 0;
    for (const auto& [rank, data] : out) {
      for (size_t at = data.find(text); at != std::string::npos; at = data.find(text, at + 1)) ++n;
    }
    return n;
  }
};

/// Steps `io` (the launcher's heartbeats and reads go on) until `done`, for at most `limit`.
bool waitStepping(boost::asio::io_context& io, const std::function<bool()>& done, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    io.restart();
    io.run_for(20ms);
  }
  return true;
}

struct Tree {
  /// With `beatMs`, the launcher asks for heartbeats every `beatMs` and gives each agent up after `silenceMs`
  /// (as dsrun's --agent_heartbeat_ms and its misses), and beats the root itself every `beatMs`.
  /// `straggler`: the index of an agent that holds its launch (-1: none). `parents`: each node's parent's index
  /// (-1: a root), parents before children; the 3-level tree of width 2 above unless told.
  explicit Tree(uint64_t outputWindow = 1u << 20, uint32_t beatMs = 0, uint32_t silenceMs = 0, int straggler = -1,
                std::vector<int> parents = {-1, 0, 1, 1, 0})
      : beat(io) {
    for (size_t i = 0; i < parents.size(); ++i) {
      const std::string host = "tree-" + std::to_string(i);
      dirs.push_back(pki.node(host, {"127.0.0.1"}));
      agents.push_back(std::make_unique<AgentProcess>(dirs.back(), tmp.path() + "/log-" + host,
                                                      static_cast<int>(i) == straggler));
    }
    for (size_t i = 0; i < parents.size(); ++i) {
      nodes.push_back({"tree-" + std::to_string(i), "127.0.0.1", agents[i]->port(), parents[i], 2});
    }
    launcherCtx.emplace(dsrun::tls::makeSslContext(pki.launcher(), dsrun::tls::Role::Client));
    client = std::make_unique<testing::TestClient>(io, *launcherCtx);
    REQUIRE_FALSE(client->connect({boost::asio::ip::make_address("127.0.0.1"),
                                   static_cast<unsigned short>(agents[0]->port())}));
    Envelope hello;
    hello.mutable_hello()->set_protocol_version(dsrun::proto::kProtocolVersion);
    hello.mutable_hello()->set_client_name("agent tree test");
    hello.mutable_hello()->set_output_window_bytes(outputWindow);
    hello.mutable_hello()->set_agent_heartbeats(beatMs > 0);
    hello.mutable_hello()->set_agent_heartbeat_ms(beatMs);
    hello.mutable_hello()->set_launcher_silence_ms(silenceMs);
    client->send(hello);
    if (beatMs > 0) beatEvery(std::chrono::milliseconds(beatMs));
    auto welcome = client->next();
    REQUIRE(welcome.has_value());
    REQUIRE(welcome->has_welcome());
    REQUIRE(welcome->welcome().tree_launch());
  }

  void launch(const std::string& job, const std::string& script) {
    Envelope e;
    root = testing::signedRootLaunch(signer, job, nodes, script);
    *e.mutable_tree_launch() = root;
    client->send(e);
  }
  void beatEvery(std::chrono::milliseconds interval) {
    beat.expires_after(interval);
    beat.async_wait([this, interval](const boost::system::error_code& ec) {
      if (ec) return;
      Envelope e;
      e.mutable_heartbeat();
      client->send(e);
      beatEvery(interval);
    });
  }
  void signal(const std::string& job, int signal) {
    Envelope e;
    e.mutable_signal()->set_job_id(job);
    e.mutable_signal()->set_signal(signal);
    client->send(e);
  }

  TempDir tmp;
  testing::TestPki pki{tmp.path() + "/pki"};
  dsrun::tls::TreeSigner signer{pki.launcher()};
  std::vector<std::string> dirs;
  std::vector<std::unique_ptr<AgentProcess>> agents;
  std::vector<testing::TreeTestNode> nodes;
  boost::asio::io_context io;
  std::optional<boost::asio::ssl::context> launcherCtx;
  std::unique_ptr<testing::TestClient> client;
  boost::asio::steady_timer beat;  ///< the launcher's heartbeat, with beatMs
  Events events;
  dsrun::wire::TreeLaunch root;    ///< the last launch, as signed (what an adopter cuts a node's slice from)
};

const char* const kHosts[] = {"tree-0", "tree-0", "tree-1", "tree-1", "tree-2", "tree-2", "tree-3", "tree-3",
                              "tree-4", "tree-4"};

}  // namespace

TEST_CASE("a 3-level tree of real agents starts every rank with its environment, streams its output and reports "
          "every exit to the launcher",
          "[agent][tree][integration]") {
  Tree tree;
  tree.launch("job-env", "echo \"rank=$RANK local=$LOCAL_RANK node=$TREE_NODE\"");
  tree.events.until(*tree.client, [&] { return tree.events.exited.size() == 10; }, "10 RankExited");
  for (int r = 0; r < 10; ++r) {
    INFO("rank " << r);
    CHECK(tree.events.pid.count(r) == 1);
    CHECK(tree.events.out[r] == "rank=" + std::to_string(r) + " local=" + std::to_string(r % 2) + " node=" +
                                    kHosts[r] + "\n");
    CHECK(tree.events.exited[r].exit_code() == 0);
  }
  CHECK(tree.events.lost.empty());
  CHECK(tree.events.errors.empty());
  // Only tree-0 was dialled by the launcher; each interior agent dialled its own children.
  CHECK_THAT(tree.agents[1]->log(), Contains("dialing 2 tree child(ren)"));
  CHECK_THAT(tree.agents[2]->log(), Contains("0 child(ren)"));
  // The launcher leaves once it has every end: the job is over everywhere, so the root releases its children and
  // each of them its own (TreeReleased.job_ends). Nobody waits for an adopter that will never come.
  tree.client->close();
  CHECK(waitStepping(tree.io, [&] {
    for (int i = 1; i < 5; ++i) {
      if (tree.agents[i]->log().find("released: job job-env ends here") == std::string::npos) return false;
    }
    return true;
  }, 30s));
  for (int i = 0; i < 5; ++i) {
    INFO("agent tree-" << i);
    CHECK_THAT(tree.agents[i]->log(), !Contains("for an ancestor to adopt it"));
  }
}

TEST_CASE("one Ctrl-C reaches every rank of every node of the tree exactly once", "[agent][tree][integration]") {
  Tree tree;
  tree.launch("job-int", "trap 'echo got-INT; exit 7' INT; echo ready; while :; do sleep 0.1; done");
  tree.events.until(*tree.client, [&] { return tree.events.linesContaining("ready") == 10; }, "10 ranks ready");
  tree.signal("job-int", SIGINT);
  tree.events.until(*tree.client, [&] { return tree.events.exited.size() == 10; }, "10 RankExited");
  for (int r = 0; r < 10; ++r) {
    INFO("rank " << r << " on " << kHosts[r] << ": " << tree.events.out[r]);
    CHECK(tree.events.exited[r].exit_code() == 7);
  }
  CHECK(tree.events.linesContaining("got-INT") == 10);
  CHECK(tree.events.lost.empty());
}

TEST_CASE("a killed interior agent costs only its own ranks: its parent adopts its children, whose ranks stay "
          "supervised and are stopped through the re-attached edges, and nothing is left",
          "[agent][tree][integration][adopt]") {
  Tree tree;
  tree.launch("job-kill", "echo ready; exec sleep 600");
  tree.events.until(*tree.client, [&] { return tree.events.linesContaining("ready") == 10; }, "10 ranks ready");
  tree.agents[1]->kill9();  // tree-1: its own ranks die with it (PDEATHSIG); tree-2 and tree-3 lose their parent
  tree.events.until(*tree.client, [&] { return !tree.events.lost.empty(); }, "NodeLost");
  CHECK(tree.events.lost[0].job_id() == "job-kill");
  CHECK(tree.events.lost[0].host() == "tree-1");
  CHECK_FALSE(tree.events.lost[0].cause().empty());
  for (int r : {2, 3}) {
    INFO("rank " << r << " pid " << tree.events.pid[r]);
    CHECK(waitStepping(tree.io, [&] { return gone(tree.events.pid[r]); }, 30s));
  }
  // tree-0 re-fans tree-1's children: they re-attach and keep their ranks running.
  CHECK(waitStepping(tree.io, [&] {
    return tree.agents[2]->log().find("re-attached here") != std::string::npos &&
           tree.agents[3]->log().find("re-attached here") != std::string::npos;
  }, 30s));
  CHECK_THAT(tree.agents[0]->log(), Contains("adopting 2 child(ren) of the lost tree-1"));
  for (int r = 4; r < 8; ++r) {
    INFO("rank " << r << " on " << kHosts[r] << " pid " << tree.events.pid[r]);
    CHECK_FALSE(gone(tree.events.pid[r]));
  }
  for (const auto& e : tree.client->arrived()) tree.events.take(*tree.client, e);
  // The launcher ends the job (as dsrun does for a lost host): one pass down the tree, adopted edges included.
  tree.signal("job-kill", SIGTERM);
  tree.events.until(*tree.client, [&] { return tree.events.exited.size() == 8; }, "the 8 surviving ranks");
  for (int r : {0, 1, 4, 5, 6, 7, 8, 9}) {
    INFO("rank " << r << " on " << kHosts[r]);
    CHECK(tree.events.exited[r].signal() == SIGTERM);
    CHECK(waitFor([&] { return gone(tree.events.pid[r]); }, 30s));
  }
  CHECK(tree.events.lost.size() == 1);
  CHECK(tree.events.exited.count(2) == 0);
  CHECK(tree.events.exited.count(3) == 0);
}

TEST_CASE("a parent still connected to its child when an ancestor adopts that child is told so, and closes the "
          "edge without reporting the child lost or re-fanning below it",
          "[agent][tree][integration][adopt][edge]") {
  Tree tree;
  tree.launch("job-away", "echo ready; exec sleep 600");
  tree.events.until(*tree.client, [&] { return tree.events.linesContaining("ready") == 10; }, "10 ranks ready");
  // tree-0 adopts its grandchild tree-2 while tree-1 still lives and holds the edge to it: what tree-0 does after
  // giving tree-1 up (silent for the budget, a straggler) when tree-1 was only slow. The test holds tree-0's
  // node certificate and sends the TreeAdopt tree-0 would send, cut from the same signed launch.
  boost::asio::ssl::context nodeCtx = dsrun::tls::makeSslContext(tree.dirs[0], dsrun::tls::Role::TreeClient);
  testing::TestClient adopter(tree.io, nodeCtx);
  REQUIRE_FALSE(adopter.connect({boost::asio::ip::make_address("127.0.0.1"),
                                 static_cast<unsigned short>(tree.agents[2]->port())}));
  adopter.hello();
  Envelope adopt;
  *adopt.mutable_tree_adopt()->mutable_launch() = testing::forwardedLaunch(tree.root, "tree-2");
  adopter.send(adopt);
  Events below;  // what reaches the adopter
  bool adopted = false;
  while (!adopted) {
    auto e = adopter.next();
    REQUIRE(e.has_value());
    adopted = e->has_tree_adopted();
    below.take(adopter, *e);
  }
  // tree-1 hears it (TreeReattached) and closes that edge as a normal end: no NodeLost, no re-fan, no warning.
  CHECK(waitStepping(tree.io, [&] {
    return tree.agents[1]->log().find("tree child tree-2 of job job-away: re-attached to an ancestor") !=
           std::string::npos;
  }, 30s));
  CHECK_THAT(tree.agents[2]->log(), Contains("job job-away re-attached here"));
  CHECK_THAT(tree.agents[2]->log(), Contains("(its parent was given up)"));
  // tree-2's side of that edge ends as normally, at INFO (it said "closing: ..." at WARN, as a refusal does).
  CHECK(waitFor([&] {
    return tree.agents[2]->log().find("was adopted by an ancestor, closing the old parent's connection") !=
           std::string::npos;
  }, 30s));
  CHECK_THAT(tree.agents[2]->log(), !Contains(" W "));
  CHECK_THAT(tree.agents[1]->log(), !Contains("tree child tree-2 of job job-away lost"));
  CHECK_THAT(tree.agents[1]->log(), !Contains("adopting"));
  // Each ends its own part: the launcher's SIGTERM reaches every rank but tree-2's (no longer below tree-1);
  // the adopter's reaches tree-2's, whose exits come to the adopter.
  tree.signal("job-away", SIGTERM);
  tree.events.until(*tree.client, [&] { return tree.events.exited.size() == 8; }, "the 8 ranks outside tree-2");
  Envelope term;
  term.mutable_signal()->set_job_id("job-away");
  term.mutable_signal()->set_signal(SIGTERM);
  adopter.send(term);
  below.until(adopter, [&] { return below.exited.size() == 2; }, "tree-2's 2 ranks at the adopter");
  for (int r : {4, 5}) {
    INFO("rank " << r << " on tree-2");
    CHECK(below.exited[r].signal() == SIGTERM);
    CHECK(tree.events.exited.count(r) == 0);
    CHECK(waitFor([&] { return gone(tree.events.pid[r]); }, 30s));
  }
  CHECK(tree.events.lost.empty());
  CHECK(below.lost.empty());
}

TEST_CASE("an adopter orphaned in turn and adopted only after its wait keeps what it held: the node it had "
          "re-attached stays attached and is stopped through it, and every rank's own end reaches the launcher",
          "[agent][tree][integration][adopt]") {
  // A chain tree-0 -> tree-1 -> tree-2 -> tree-3, 2 ranks each (0-1, 2-3, 4-5, 6-7); every edge beats every
  // 150 ms and gives the other side up after 2 s, so an orphan waits 4 s for an adopter.
  Tree tree(1u << 20, 150, 2000, -1, {-1, 0, 1, 2});
  const std::string go = tree.tmp.path() + "/go";
  // Ranks 3 (tree-1) and 7 (tree-3) run on until they are stopped; the others end with codes of their own.
  tree.launch("job-late", "echo ready; case $RANK in 3|7) exec sleep 600;; esac; while [ ! -e " + go +
                              " ]; do sleep 0.05; done; exit $((RANK + 3))");
  tree.events.until(*tree.client, [&] { return tree.events.linesContaining("ready") == 8; }, "8 ranks ready");
  // tree-2 dies: tree-1 reports it and re-attaches tree-3 to itself.
  tree.agents[2]->kill9();
  tree.events.until(*tree.client, [&] { return !tree.events.lost.empty(); }, "NodeLost for tree-2");
  CHECK(tree.events.lost[0].host() == "tree-2");
  REQUIRE(waitStepping(tree.io, [&] {
    return tree.agents[3]->log().find("re-attached here") != std::string::npos;
  }, 30s));
  // tree-0 dies: tree-1 is an orphan holding tree-3, and the launcher (which adopts a lost root's children) is
  // late. Ranks 2 and 6 end meanwhile, each with its own code: their ends wait at tree-1. When tree-1 gives up
  // waiting it stops ranks 3 and 7 (tree-3's through the edge it kept), and their ends wait there too.
  tree.agents[0]->kill9();
  REQUIRE(waitFor([&] { return tree.agents[1]->log().find("for an ancestor to adopt it") != std::string::npos; },
                  30s));
  std::ofstream(go).put('\n');
  REQUIRE(waitFor([&] { return tree.agents[1]->log().find("no ancestor adopted job job-late") != std::string::npos; },
                  30s));
  // The launcher adopts tree-1 after its wait, as dsrun does for a lost root's children.
  testing::TestClient adopter(tree.io, *tree.launcherCtx);
  REQUIRE_FALSE(adopter.connect({boost::asio::ip::make_address("127.0.0.1"),
                                 static_cast<unsigned short>(tree.agents[1]->port())}));
  adopter.hello(dsrun::proto::kProtocolVersion, 1u << 20);
  Envelope adopt;
  *adopt.mutable_tree_adopt()->mutable_launch() = testing::forwardedLaunch(tree.root, "tree-1");
  adopter.send(adopt);
  Events late;
  late.until(adopter, [&] { return !late.errors.empty() || (late.adopted && late.exited.size() == 4); },
             "TreeAdopted and the 4 surviving ranks' ends");  // an error: refused (a replay, before)
  INFO(late.summary());
  for (int r : {2, 6}) {
    INFO("rank " << r);
    CHECK(late.exited[r].exit_code() == r + 3);
    CHECK(late.exited[r].signal() == 0);
  }
  for (int r : {3, 7}) CHECK(late.exited[r].signal() == SIGTERM);
  CHECK(late.errors.empty());
  for (const auto& lost : late.lost) CHECK(lost.host() == "tree-2");  // passed up again; nothing else lost
  // tree-3 waited once (tree-2's death), never again: tree-1 kept it attached while it waited and gave up.
  const std::string log3 = tree.agents[3]->log();
  CHECK(log3.find("waits up to") == log3.rfind("waits up to"));
  CHECK_THAT(log3, !Contains("no ancestor adopted"));
  for (int r : {2, 3, 6, 7}) CHECK(waitFor([&] { return gone(tree.events.pid[r]); }, 30s));
}

TEST_CASE("a node that stopped its job stops the children it re-fans afterwards too: a child lost before it passed "
          "the stop on does not leave its children running",
          "[agent][tree][integration][adopt]") {
  Tree tree;
  // The test is tree-0's relay (with tree-0's node certificate), as an orphan that gave up waiting has it.
  boost::asio::ssl::context nodeCtx = dsrun::tls::makeSslContext(tree.dirs[0], dsrun::tls::Role::TreeClient);
  Events up;
  dsrun::agent::TreeRelay relay(tree.io, nodeCtx, "agent tree test",
                                {[&](const Envelope& e) { up.take(*tree.client, e); }, [] { return false; }, nullptr});
  up.credit = false;  // nothing to return: the relay credits its children itself when its parent has no window
  const auto root = testing::signedRootLaunch(tree.signer, "job-stop", tree.nodes, "echo ready; exec sleep 600");
  // Every edge beats every 150 ms and gives the other side up after 2 s.
  dsrun::agent::ChildLink::Timing timing;
  timing.beatMs = 150;
  timing.silenceMs = 2000;
  relay.forward("job-stop", dsrun::proto::childTreeLaunches(root, dsrun::proto::readTreeLaunch(root, testing::testSha())),
                timing);
  REQUIRE(waitStepping(tree.io, [&] { return up.linesContaining("ready") == 8; }, 30s));  // ranks 2-9
  // tree-1 hangs before the stop reaches it: it will not pass the stop to tree-2 and tree-3.
  tree.agents[1]->pause();
  relay.stop("job-stop");
  // tree-1 is lost after 2 s of silence and its children are re-fanned from here: they get the stop too.
  INFO(up.summary());
  CHECK(waitStepping(tree.io, [&] { return up.exited.size() == 6 && up.lost.size() == 1; }, 30s));
  tree.agents[1]->resume();
  REQUIRE(up.lost.size() == 1);
  CHECK(up.lost[0].host() == "tree-1");
  for (int r : {4, 5, 6, 7, 8, 9}) {
    INFO("rank " << r << " on " << kHosts[r]);
    CHECK(up.exited[r].signal() == SIGTERM);
    CHECK(waitFor([&] { return gone(up.pid[r]); }, 30s));
  }
  relay.closeAll(true);
}

TEST_CASE("an interior agent dead before it could forward the launch costs only its own ranks: its parent starts "
          "its children itself",
          "[agent][tree][integration][adopt]") {
  Tree tree;
  tree.agents[1]->kill9();  // tree-1 is gone before the launch reaches it
  tree.launch("job-early", "echo started-$RANK");
  // Every rank but tree-1's runs and succeeds; the launcher hears of tree-1 alone.
  tree.events.until(*tree.client, [&] { return tree.events.exited.size() == 8 && !tree.events.lost.empty(); },
                    "8 RankExited and NodeLost");
  REQUIRE(tree.events.lost.size() == 1);
  CHECK(tree.events.lost[0].host() == "tree-1");
  CHECK_THAT(tree.events.lost[0].cause(), Contains("connect"));
  for (int r : {0, 1, 4, 5, 6, 7, 8, 9}) {
    INFO("rank " << r << " on " << kHosts[r]);
    CHECK(tree.events.out[r] == "started-" + std::to_string(r) + "\n");
    CHECK(tree.events.exited[r].exit_code() == 0);
  }
  CHECK(tree.events.pid.count(2) == 0);
  CHECK(tree.events.pid.count(3) == 0);
  CHECK_THAT(tree.agents[2]->log(), Contains("adopted before its parent forwarded the launch"));
  CHECK(tree.events.errors.empty());
}

TEST_CASE("a straggler that welcomes its parent but never acknowledges its launch is given up after the edge's "
          "budget, and its children are started by its parent",
          "[agent][tree][integration][adopt]") {
  // Every edge beats every 150 ms; 2 s without an answer to the launch is a straggler.
  Tree tree(1u << 20, 150, 2000, /*straggler=*/1);
  tree.launch("job-slow", "echo started-$RANK");
  tree.events.until(*tree.client, [&] { return tree.events.exited.size() == 8 && !tree.events.lost.empty(); },
                    "8 RankExited and NodeLost");
  REQUIRE(tree.events.lost.size() == 1);
  CHECK(tree.events.lost[0].host() == "tree-1");
  CHECK_THAT(tree.events.lost[0].cause(), Contains("did not acknowledge its launch within 2000 ms"));
  for (int r : {0, 1, 4, 5, 6, 7, 8, 9}) {
    INFO("rank " << r << " on " << kHosts[r]);
    CHECK(tree.events.exited[r].exit_code() == 0);
  }
  CHECK(tree.events.pid.count(2) == 0);
  CHECK_THAT(tree.agents[3]->log(), Contains("adopted before its parent forwarded the launch"));
  CHECK_THAT(tree.agents[1]->log(), Contains("holding job job-slow"));
}

TEST_CASE("a leaf's output is read no faster than the launcher takes it: each edge of the tree holds it back",
          "[agent][tree][integration]") {
  Tree tree(256 * 1024);
  // Rank 4 (tree-2, two edges below the root) writes 4 MiB; the others only say they are done.
  const uint64_t flood = 65536 * 64;
  tree.launch("job-flood",
              "if [ \"$RANK\" = 4 ]; then yes $(printf '%063d' 0) | head -n 65536; fi; echo done-$RANK");
  tree.events.credit = false;  // the launcher's reader stalls: no credit goes back
  tree.io.run_for(1500ms);
  for (const auto& e : tree.client->arrived()) tree.events.take(*tree.client, e);
  INFO(tree.events.summary().substr(0, 2000));
  // At most about the windows along the path (64 KiB at tree-2, 128 KiB at tree-1, one chunk each over):
  // without back-pressure per edge all 4 MiB would be here by now.
  CHECK(tree.events.out[4].size() <= 512 * 1024);
  CHECK(tree.events.exited.count(4) == 0);  // blocked in write(2), as on a slow terminal
  // The reader catches up: everything arrives, in order, and every rank ends.
  tree.events.credit = true;
  Envelope back;
  back.mutable_output_credit()->set_bytes(tree.events.uncredited);
  tree.client->send(back);
  tree.events.until(*tree.client, [&] { return tree.events.exited.size() == 10; }, "10 RankExited");
  CHECK(tree.events.out[4].size() == flood + std::string("done-4\n").size());
  CHECK(tree.events.out[4].substr(0, 64) == std::string(63, '0') + "\n");
  for (int r = 0; r < 10; ++r) CHECK(tree.events.exited[r].exit_code() == 0);
  CHECK(tree.events.lost.empty());
}

TEST_CASE("a silent agent is reported as lost by its parent, and stops its ranks once it hears its parent gone",
          "[agent][tree][integration]") {
  // Every edge beats every 150 ms; 2 s of silence is a loss (wide enough for a loaded 2-core machine).
  Tree tree(1u << 20, 150, 2000);
  tree.launch("job-silent", "echo ready; exec sleep 600");
  tree.events.until(*tree.client, [&] { return tree.events.linesContaining("ready") == 10; }, "10 ranks ready");
  tree.agents[4]->pause();  // tree-4 hangs: its socket stays open, nothing comes from it
  tree.events.until(*tree.client, [&] { return !tree.events.lost.empty(); }, "NodeLost");
  CHECK(tree.events.lost[0].host() == "tree-4");
  CHECK_THAT(tree.events.lost[0].cause(), Contains("silent for 2000 ms"));
  // The other ranks ran on meanwhile: only the silent node's subtree is lost.
  CHECK(tree.events.exited.empty());
  tree.agents[4]->resume();  // it finds its parent gone and stops its ranks
  for (int r : {8, 9}) {
    INFO("rank " << r << " pid " << tree.events.pid[r]);
    CHECK(waitStepping(tree.io, [&] { return gone(tree.events.pid[r]); }, 30s));
  }
  tree.signal("job-silent", SIGTERM);
  tree.events.until(*tree.client, [&] { return tree.events.exited.size() == 8; }, "the 8 other ranks");
  for (int r = 0; r < 8; ++r) CHECK(tree.events.exited[r].signal() == SIGTERM);
  CHECK(tree.events.lost.size() == 1);
}

TEST_CASE("a probed tree launch starts nothing until go: every node probes its signed targets, the subtree's "
          "merged report names the broken pair, and go starts every rank",
          "[agent][tree][integration][probe]") {
  Tree tree;
  // Each node probes its parent's agent and the root's; tree-3 also a closed port (nothing listens on port 1).
  std::vector<std::vector<std::string>> targets(tree.nodes.size());
  for (size_t i = 1; i < tree.nodes.size(); ++i) {
    const auto& parent = tree.nodes[static_cast<size_t>(tree.nodes[i].parent)];
    targets[i] = {"127.0.0.1:" + std::to_string(parent.port), "127.0.0.1:" + std::to_string(tree.nodes[0].port)};
  }
  targets[3].push_back("127.0.0.1:1");
  const std::string dir = tree.tmp.path() + "/started";
  ::mkdir(dir.c_str(), 0755);
  Envelope e;
  *e.mutable_tree_launch() = testing::signedRootLaunch(tree.signer, "job-probe", tree.nodes,
                                                       "touch " + dir + "/$RANK", 0, testing::nowUnixUs(), targets);
  e.mutable_tree_launch()->mutable_probe()->set_timeout_ms(2000);
  tree.client->send(e);
  const Envelope reportEnvelope = tree.client->nextWhere([](const Envelope& m) { return m.has_tree_probe_report(); },
                                                         "the tree's probe report");
  const auto& report = reportEnvelope.tree_probe_report();
  CHECK(report.job_id() == "job-probe");
  CHECK(report.pairs() == 9);  // 4 nodes x 2 targets + tree-3's closed port
  REQUIRE(report.broken_count() == 1);
  REQUIRE(report.broken_size() == 1);
  CHECK(report.broken(0).from() == "tree-3");
  CHECK(report.broken(0).target() == "127.0.0.1:1");
  CHECK_THAT(report.broken(0).error(), Contains("refused"));
  // Held everywhere: no node has started a rank, though every node has its launch and has probed.
  for (size_t i = 0; i < tree.agents.size(); ++i) {
    INFO("agent tree-" << i << ": " << tree.agents[i]->log());
    // The root's part names no target here: it holds without probing, and says so.
    CHECK_THAT(tree.agents[i]->log(), Contains(i == 0 ? "job-probe held until go, no mesh probe target here"
                                                      : "job-probe held for its mesh probe"));
  }
  CHECK(::rmdir(dir.c_str()) == 0);  // empty: nothing ran
  ::mkdir(dir.c_str(), 0755);
  for (const Envelope& m : tree.client->seen) CHECK_FALSE(m.has_event_batch());
  Envelope go;
  go.mutable_tree_go()->set_job_id("job-probe");
  tree.client->send(go);
  tree.events.until(*tree.client, [&] { return tree.events.exited.size() == 10; }, "10 RankExited");
  for (int r = 0; r < 10; ++r) {
    INFO("rank " << r);
    CHECK(tree.events.exited[r].exit_code() == 0);
    CHECK(::access((dir + "/" + std::to_string(r)).c_str(), F_OK) == 0);
  }
  CHECK(tree.events.lost.empty());
  CHECK(tree.events.errors.empty());
}
