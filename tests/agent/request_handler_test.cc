#include "agent/request_handler.h"

#include <catch2/catch.hpp>

#include "proto/protocol.h"
#include "proto/rank_env.h"

using Catch::Matchers::Contains;
using namespace dsrun::agent;
using namespace dsrun::wire;
using Kind = Action::Kind;

namespace {

RequestHandler handler() { return RequestHandler({"node-7", 250, 8}); }

Envelope hello(uint32_t version) {
  Envelope e;
  e.mutable_hello()->set_protocol_version(version);
  e.mutable_hello()->set_client_name("dsrun test");
  return e;
}

Envelope launch(const std::string& jobId, int ranks = 2) {
  Envelope e;
  auto* l = e.mutable_launch();
  l->set_job_id(jobId);
  for (int r = 0; r < ranks; ++r) {
    auto* rank = l->add_ranks();
    rank->set_rank(r);
    rank->add_argv("/bin/true");
    dsrun::proto::addEnv(*rank, "RANK", std::to_string(r));
  }
  return e;
}

Envelope signal(const std::string& jobId, int sig) {
  Envelope e;
  e.mutable_signal()->set_job_id(jobId);
  e.mutable_signal()->set_signal(sig);
  return e;
}

SessionView welcomed() {
  SessionView v;
  v.welcomed = true;
  return v;
}

std::vector<Kind> kinds(const std::vector<Action>& actions) {
  std::vector<Kind> out;
  for (const auto& a : actions) out.push_back(a.kind);
  return out;
}

}  // namespace

TEST_CASE("a matching hello is answered with a welcome naming the host and heartbeat period", "[agent]") {
  auto actions = handler().handle(hello(dsrun::proto::kProtocolVersion), SessionView{});
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::MarkWelcomed, Kind::Send});
  const auto& w = actions[1].envelope.welcome();
  CHECK(w.protocol_version() == dsrun::proto::kProtocolVersion);
  CHECK(w.agent_host() == "node-7");
  CHECK(w.heartbeat_period_ms() == 250);
}

TEST_CASE("a hello with another protocol version is refused naming both versions", "[agent]") {
  auto actions = handler().handle(hello(99), SessionView{});
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::Send, Kind::Close});
  CHECK_THAT(actions[0].envelope.error().message(),
             Contains("protocol version mismatch: client 'dsrun test' speaks version 99, this agent speaks version 3"));
}

TEST_CASE("any message before hello closes the connection", "[agent]") {
  Envelope first = GENERATE(launch("j"), signal("j", 15), Envelope());
  auto actions = handler().handle(first, SessionView{});
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::Send, Kind::Close});
  CHECK_THAT(actions[0].envelope.error().message(), Contains("expected hello first"));
}

TEST_CASE("a second hello closes the connection", "[agent]") {
  auto actions = handler().handle(hello(dsrun::proto::kProtocolVersion), welcomed());
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::Send, Kind::Close});
  CHECK_THAT(actions[0].envelope.error().message(), Contains("duplicate hello"));
}

TEST_CASE("agent-to-client messages from a client close the connection", "[agent]") {
  Envelope e;
  e.mutable_rank_exited()->set_rank(0);
  auto actions = handler().handle(e, welcomed());
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::Send, Kind::Close});
  CHECK_THAT(actions[0].envelope.error().message(), Contains("unexpected rank_exited from a client"));
}

TEST_CASE("a valid launch request becomes a Launch action", "[agent]") {
  auto actions = handler().handle(launch("job-1"), welcomed());
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::Launch});
  CHECK(actions[0].launch.job_id() == "job-1");
  CHECK(actions[0].launch.ranks_size() == 2);
}

TEST_CASE("a launch reusing a running job id is refused without closing", "[agent]") {
  SessionView v = welcomed();
  v.agentJobs = {"job-1"};
  auto actions = handler().handle(launch("job-1"), v);
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::Send});
  CHECK(actions[0].envelope.error().job_id() == "job-1");
  CHECK_THAT(actions[0].envelope.error().message(), Contains("job 'job-1' is already running on this agent"));
}

TEST_CASE("invalid launch requests are refused naming the field", "[agent]") {
  auto [name, mutate, expected] =
      GENERATE(table<std::string, std::function<void(LaunchRequest&)>, std::string>({
          {"empty job id", [](LaunchRequest& l) { l.set_job_id(""); }, "job_id is empty"},
          {"job id with space", [](LaunchRequest& l) { l.set_job_id("a b"); }, "printable ASCII"},
          {"no ranks", [](LaunchRequest& l) { l.clear_ranks(); }, "no ranks to launch"},
          {"duplicate rank", [](LaunchRequest& l) { l.mutable_ranks(1)->set_rank(0); }, "rank 0 appears twice"},
          {"negative rank", [](LaunchRequest& l) { l.mutable_ranks(0)->set_rank(-1); }, "non-negative"},
          {"empty argv", [](LaunchRequest& l) { l.mutable_ranks(1)->clear_argv(); }, "rank 1: argv is empty"},
          {"NUL in argv", [](LaunchRequest& l) { l.mutable_ranks(0)->add_argv(std::string("a\0b", 3)); },
           "argv contains a NUL byte"},
          {"bad env name", [](LaunchRequest& l) { dsrun::proto::addEnv(*l.mutable_ranks(0), "A=B", "x"); },
           "invalid environment variable name 'A=B'"},
          {"tag with slash", [](LaunchRequest& l) { l.mutable_log()->set_tag("../x"); }, "log tag"},
          {"too many ranks", [](LaunchRequest& l) {
             for (int r = 2; r < 9; ++r) {
               auto* extra = l.add_ranks();
               extra->CopyFrom(l.ranks(0));
               extra->set_rank(r);
             }
           }, "too many ranks: at most 8 per job, got 9"},
          {"grace too long", [](LaunchRequest& l) { l.set_kill_grace_s(1e9); }, "kill_grace_s"},
          {"bad core", [](LaunchRequest& l) { l.mutable_ranks(0)->add_cores(-3); }, "invalid core '-3'"},
      }));
  INFO(name);
  Envelope e = launch("job-1");
  mutate(*e.mutable_launch());
  auto actions = handler().handle(e, welcomed());
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::Send});
  CHECK_THAT(actions[0].envelope.error().message(), Contains("launch refused: " ) && Contains(expected));
}

TEST_CASE("a signal for one of the session's jobs becomes a Signal action", "[agent]") {
  SessionView v = welcomed();
  v.ownJobs = {"job-1"};
  v.agentJobs = {"job-1"};
  auto actions = handler().handle(signal("job-1", 15), v);
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::Signal});
  CHECK(actions[0].jobId == "job-1");
  CHECK(actions[0].signal == 15);
}

TEST_CASE("a signal for another connection's job is refused (jobs are isolated)", "[agent]") {
  SessionView v = welcomed();
  v.agentJobs = {"their-job"};
  auto actions = handler().handle(signal("their-job", 9), v);
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::Send});
  CHECK_THAT(actions[0].envelope.error().message(), Contains("no job 'their-job' of this connection is running"));
}

TEST_CASE("a signal number out of range is refused", "[agent]") {
  SessionView v = welcomed();
  v.ownJobs = {"j"};
  const int sig = GENERATE(0, -1, 65, 1000);
  auto actions = handler().handle(signal("j", sig), v);
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::Send});
  CHECK_THAT(actions[0].envelope.error().message(), Contains("signal number must be in 1.."));
}

TEST_CASE("heartbeats need no action and a client error closes the connection", "[agent]") {
  Envelope beat;
  beat.mutable_heartbeat()->set_sequence(3);
  CHECK(handler().handle(beat, welcomed()).empty());
  Envelope err;
  err.mutable_error()->set_message("bye");
  auto actions = handler().handle(err, welcomed());
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::Close});
  CHECK_THAT(actions[0].reason, Contains("client reported: bye"));
}

TEST_CASE("output credit becomes a Credit action; a hello asking for heartbeats is told they come", "[agent]") {
  Envelope credit;
  credit.mutable_output_credit()->set_bytes(65536);
  auto actions = handler().handle(credit, welcomed());
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::Credit});
  CHECK(actions[0].bytes == 65536);
  Envelope h = hello(dsrun::proto::kProtocolVersion);
  h.mutable_hello()->set_agent_heartbeats(true);
  auto welcome = handler().handle(h, SessionView{});
  REQUIRE(kinds(welcome) == std::vector<Kind>{Kind::MarkWelcomed, Kind::Send});
  CHECK(welcome[1].envelope.welcome().agent_heartbeats());
  CHECK_FALSE(handler().handle(hello(dsrun::proto::kProtocolVersion), SessionView{})[1].envelope.welcome()
                  .agent_heartbeats());
}

TEST_CASE("the agent's beat interval: the client's wish within [50 ms, half the period]", "[agent]") {
  using dsrun::agent::agentBeatIntervalMs;
  CHECK(agentBeatIntervalMs(0, 3333) == 1666);  // no wish: half the period, as before
  CHECK(agentBeatIntervalMs(500, 3333) == 500);
  CHECK(agentBeatIntervalMs(10, 3333) == 50);
  CHECK(agentBeatIntervalMs(5000, 3333) == 1666);
  CHECK(agentBeatIntervalMs(500, 60) == 50);
  Envelope h = hello(dsrun::proto::kProtocolVersion);
  h.mutable_hello()->set_agent_heartbeats(true);
  h.mutable_hello()->set_agent_heartbeat_ms(100);
  auto welcome = handler().handle(h, SessionView{});
  REQUIRE(kinds(welcome) == std::vector<Kind>{Kind::MarkWelcomed, Kind::Send});
  CHECK(welcome[1].envelope.welcome().agent_heartbeat_ms() == 100);  // within half of the test agent's 250 ms period
}

TEST_CASE("an agent judges its launcher by the launcher's own budget, a longer one bounded", "[agent]") {
  using dsrun::agent::kLongestLauncherSilenceMs;
  using dsrun::agent::launcherSilenceBudgetMs;
  CHECK(launcherSilenceBudgetMs(0, 10000) == 10000);      // none sent: the agent's own
  CHECK(launcherSilenceBudgetMs(2500, 10000) == 2500);    // shorter: a cut-off host stops when dsrun gives it up
  CHECK(launcherSilenceBudgetMs(15000, 10000) == 15000);  // longer (dsrun's floor at 1,000 x 8): taken
  CHECK(launcherSilenceBudgetMs(kLongestLauncherSilenceMs + 1, 10000) == kLongestLauncherSilenceMs);
  CHECK(launcherSilenceBudgetMs(400000, 300000) == 300000);  // an agent's own longer timeout still stands
}

TEST_CASE("output credit before hello is refused", "[agent]") {
  Envelope credit;
  credit.mutable_output_credit()->set_bytes(1);
  auto actions = handler().handle(credit, SessionView{});
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::Send, Kind::Close});
  CHECK_THAT(actions[0].envelope.error().message(), Contains("expected hello first, got output_credit"));
}

TEST_CASE("the welcome says the agent answers MASTER_PORT pre-flight requests", "[agent][port]") {
  auto actions = handler().handle(hello(dsrun::proto::kProtocolVersion), SessionView{});
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::MarkWelcomed, Kind::Send});
  CHECK(actions[1].envelope.welcome().port_check());
}

TEST_CASE("a port check asks the session to check that port, 0 included", "[agent][port]") {
  const uint32_t port = GENERATE(0u, 29500u, 65535u);
  Envelope e;
  e.mutable_port_check()->set_port(port);
  auto actions = handler().handle(e, welcomed());
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::CheckPort});
  CHECK(actions[0].port == static_cast<int>(port));
}

TEST_CASE("a port check beyond 65535 is answered with an error naming the port", "[agent][port]") {
  Envelope e;
  e.mutable_port_check()->set_port(70000);
  auto actions = handler().handle(e, welcomed());
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::Send});
  const auto& reply = actions[0].envelope.port_check_reply();
  CHECK(reply.port() == 70000);
  CHECK_THAT(reply.error(), Contains("port must be in 0..65535, got '70000'"));
}

TEST_CASE("a port check before hello closes the connection", "[agent][port]") {
  Envelope e;
  e.mutable_port_check()->set_port(29500);
  auto actions = handler().handle(e, SessionView{});
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::Send, Kind::Close});
  CHECK_THAT(actions[0].envelope.error().message(), Contains("expected hello first, got port_check"));
}

TEST_CASE("a mesh probe request becomes a probe of its targets; the welcome says the agent runs it", "[agent][mesh]") {
  CHECK(handler().handle(hello(dsrun::proto::kProtocolVersion), SessionView{})[1].envelope.welcome().mesh_probe());
  Envelope e;
  e.mutable_mesh_probe()->add_targets("dsn2:29600");
  e.mutable_mesh_probe()->add_targets("dsn3:29600");
  e.mutable_mesh_probe()->set_timeout_ms(500);
  auto actions = handler().handle(e, welcomed());
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::ProbeMesh});
  CHECK(actions[0].probe.targets_size() == 2);
  CHECK(actions[0].probe.timeout_ms() == 500);
}

TEST_CASE("a mesh probe beyond its bounds is refused naming the bound", "[agent][mesh]") {
  Envelope many;
  for (int i = 0; i < 4097; ++i) many.mutable_mesh_probe()->add_targets("h:1");
  Envelope slow;
  slow.mutable_mesh_probe()->set_timeout_ms(600000);
  Envelope empty;
  empty.mutable_mesh_probe()->add_targets("");
  for (const auto& [e, message] : std::vector<std::pair<Envelope, std::string>>{
           {many, "at most 4096 targets, got 4097"}, {slow, "timeout_ms must be at most 60000"}, {empty, "bad target ''"}}) {
    auto actions = handler().handle(e, welcomed());
    REQUIRE(kinds(actions) == std::vector<Kind>{Kind::Send, Kind::Close});
    CHECK_THAT(actions[0].envelope.error().message(), Contains("mesh probe refused: " + message));
  }
}

TEST_CASE("a tree agent's welcome says it takes the probe inside a tree launch; a star-only agent's does not",
          "[agent][tree][probe]") {
  const auto tree =
      RequestHandler({"node-7", 250, 8, true}).handle(hello(dsrun::proto::kProtocolVersion), SessionView{});
  REQUIRE(tree.size() == 2);
  CHECK(tree[1].envelope.welcome().tree_probe());
  const auto star = handler().handle(hello(dsrun::proto::kProtocolVersion), SessionView{});
  REQUIRE(star.size() == 2);
  CHECK_FALSE(star[1].envelope.welcome().tree_probe());
}

TEST_CASE("a tree go from the parent node becomes a go for its job; an agent without tree launches refuses it",
          "[agent][tree][probe]") {
  Envelope go;
  go.mutable_tree_go()->set_job_id("job-9");
  SessionView fromParent = welcomed();
  fromParent.peerIsNode = true;  // a node certificate may send it: it only starts what a launcher signed
  const auto actions = RequestHandler({"node-7", 250, 8, true}).handle(go, fromParent);
  REQUIRE(kinds(actions) == std::vector<Kind>{Kind::TreeGo});
  CHECK(actions[0].jobId == "job-9");
  const auto refused = handler().handle(go, welcomed());
  REQUIRE_FALSE(refused.empty());
  CHECK(refused[0].envelope.error().message() == "protocol error: this agent serves no tree launches");
}

TEST_CASE("store traffic is taken from a node certificate and refused from a launcher's", "[agent][store]") {
  Envelope request;
  request.mutable_store_request()->set_job_id("j");
  request.mutable_store_request()->add_keys("/0/0");
  Envelope reply;
  reply.mutable_store_reply()->set_job_id("j");
  SessionView node = welcomed();
  node.peerIsNode = true;
  for (const Envelope& e : {request, reply}) {
    auto fromNode = handler().handle(e, node);
    REQUIRE(kinds(fromNode) == std::vector<Kind>{Kind::Store});
    CHECK(fromNode[0].envelope.SerializeAsString() == e.SerializeAsString());
    auto fromLauncher = handler().handle(e, welcomed());
    REQUIRE(kinds(fromLauncher) == std::vector<Kind>{Kind::Send, Kind::Close});
    CHECK_THAT(fromLauncher[0].envelope.error().message(), Contains("from a launcher certificate"));
  }
}
