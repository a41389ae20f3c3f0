// The agent against launchers that misbehave: one that stops reading while a rank
// floods, one that vanishes mid-frame, one that floods requests without reading the replies; and
// the output window (Hello.output_window_bytes / OutputCredit) that bounds what the agent sends.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "proto/frame_codec.h"
#include "tests/agent/agent_fixture.h"

using Catch::Matchers::Contains;
using namespace std::chrono_literals;
using testing::alive;
using testing::collect;
using testing::Envelope;
using testing::Fixture;
using testing::JobResult;
using testing::launchSh;
using testing::runUntil;
using testing::TestClient;
using dsrun::agent::AgentServer;

namespace {

/// The agent still serves: a new launcher runs a job to completion.
void requireServing(Fixture& f) {
  auto c = f.welcomedClient();
  c->send(launchSh("job-after", {"echo still-serving"}));
  JobResult r = collect(*c, 1);
  CHECK(r.out[0] == "still-serving\n");
}

Envelope credit(uint64_t bytes) {
  Envelope e;
  e.mutable_output_credit()->set_bytes(bytes);
  return e;
}

}  // namespace

TEST_CASE("a launcher that stops reading while a rank floods pauses the rank, and its end does not crash the agent",
          "[agent][flow]") {
  const std::string how = GENERATE(std::string("disconnects"), std::string("stops its heartbeats"));
  AgentServer::Options o;
  if (how == "stops its heartbeats") o.heartbeatTimeout = 600ms;
  o.killGrace = 200ms;
  Fixture f(o);
  auto c = f.welcomedClient();
  c->pauseReading();
  c->send(launchSh("job-flood", {"yes 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}));
  // The kernel's socket buffers fill, then the agent's queue passes its high-water mark: the agent
  // must stop reading the rank's pipe (the rank then blocks on it) instead of growing its memory.
  runUntil(f.io, [&] { return f.server->pausedStreamCount() > 0; }, "the flooding rank's stdout to be paused");
  SECTION("then " + how) {
    if (how == "disconnects") c->close();
    runUntil(f.io, [&] { return f.server->liveRankCount() == 0 && f.server->sessionCount() == 0; },
             "the agent to stop the lost launcher's flooding rank");
    c.reset();
    requireServing(f);
  }
}

TEST_CASE("with an output window the agent reads a rank only as far as the launcher's credit, and loses nothing",
          "[agent][flow]") {
  constexpr uint64_t kWindow = 64 * 1024;
  Fixture f;
  auto c = f.welcomedClient(kWindow);
  const auto before = std::chrono::system_clock::now();
  c->send(launchSh("job-w", {"seq 1 200000; printf tail-without-newline"}));
  std::string out;
  while (out.size() < kWindow) {
    auto e = c->nextWhere([](const Envelope& m) { return m.has_output(); }, "output within the window");
    out += e.output().data();
  }
  runUntil(f.io, [&] { return f.server->pausedStreamCount() == 1; }, "the rank's stdout to wait for credit");
  // One chunk (64 KiB, the pipe read size) may overdraw the window; nothing more is sent without credit.
  CHECK(out.size() <= kWindow + 64 * 1024);
  uint64_t granted = 0;
  JobResult r;
  while (r.exited.empty()) {
    if (out.size() > granted) {
      c->send(credit(out.size() - granted));
      granted = out.size();
    }
    auto e = c->next();
    REQUIRE(e.has_value());
    if (e->has_output()) out += e->output().data();
    if (e->has_rank_exited()) r.exited[0] = e->rank_exited();
  }
  std::string expected;
  for (int i = 1; i <= 200000; ++i) expected += std::to_string(i) + "\n";
  expected += "tail-without-newline";
  CHECK(out.size() == expected.size());
  CHECK(out == expected);
  CHECK(r.exited[0].exit_code() == 0);
  const auto exitUs = std::chrono::microseconds(r.exited[0].exit_time_unix_us());
  CHECK(exitUs >= std::chrono::duration_cast<std::chrono::microseconds>(before.time_since_epoch()));
  CHECK(exitUs <= std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch()));
}

TEST_CASE("a rank's last output paused by flow control outlives the drain deadline", "[agent][flow]") {
  AgentServer::Options o;
  o.drainAfterExit = 50ms;  // far shorter than the time the launcher withholds credit below
  Fixture f(o);
  auto c = f.welcomedClient(1);  // a one-byte window: the first line spends it
  c->send(launchSh("job-d", {"echo first; sleep 0.2; for i in $(seq 1 5000); do echo $i; done"}));
  runUntil(f.io, [&] { return f.server->pausedStreamCount() == 1; }, "the rank's stdout to wait for credit");
  // Meanwhile the rank writes the rest into its pipe (24 KB, less than the pipe holds) and exits;
  // the drain deadline passes many times over while the launcher withholds credit.
  const auto until = std::chrono::steady_clock::now() + 700ms;
  while (std::chrono::steady_clock::now() < until) f.io.run_one_for(20ms);
  c->send(credit(1u << 20));
  std::string out;
  JobResult r;
  while (r.exited.empty()) {
    auto e = c->next();
    REQUIRE(e.has_value());
    if (e->has_output()) out += e->output().data();
    if (e->has_rank_exited()) r.exited[0] = e->rank_exited();
  }
  std::string expected = "first\n";
  for (int i = 1; i <= 5000; ++i) expected += std::to_string(i) + "\n";
  CHECK(out == expected);
  CHECK(r.exited[0].exit_code() == 0);
}

TEST_CASE("a launcher that disconnects in the middle of a frame ends only its own session", "[agent][flow]") {
  Fixture f;
  auto victim = f.welcomedClient();
  victim->send(launchSh("job-v", {"exec sleep 30"}));
  victim->nextWhere([](const Envelope& e) { return e.has_rank_started(); }, "job-v started");
  auto half = f.welcomedClient();
  std::string frame = dsrun::proto::encodeFrame(launchSh("job-half", {"exec sleep 30"}));
  half->sendRaw(frame.substr(0, frame.size() / 2));
  half->close();
  runUntil(f.io, [&] { return f.server->sessionCount() == 1; }, "the half-frame session to end");
  CHECK(f.server->liveRankCount() == 1);
  requireServing(f);
}

TEST_CASE("a launcher that floods requests without reading the replies is cut off", "[agent][flow]") {
  Fixture f;
  auto flood = f.welcomedClient();
  flood->pauseReading();
  Envelope refused;  // each one is answered with an Error the client never reads
  refused.mutable_signal()->set_job_id("no-such-job");
  refused.mutable_signal()->set_signal(SIGUSR1);
  const std::string frame = dsrun::proto::encodeFrame(refused);
  std::string burst;
  for (int i = 0; i < 20000; ++i) burst += frame;
  for (int i = 0; i < 40 && f.server->sessionCount() > 0; ++i) {
    flood->sendRaw(burst);
    f.io.poll();
  }
  runUntil(f.io, [&] { return f.server->sessionCount() == 0; }, "the flooding launcher to be cut off");
  requireServing(f);
}

TEST_CASE("an agent asked for heartbeats sends them at half its period", "[agent][flow]") {
  AgentServer::Options o;
  o.heartbeatTimeout = 300ms;  // period 100 ms
  Fixture f(o);
  auto c = std::make_unique<TestClient>(f.io, *f.clientCtx);
  REQUIRE_FALSE(c->connect(f.server->localEndpoint()));
  c->hello(dsrun::proto::kProtocolVersion, 0, true);
  auto w = c->next();
  REQUIRE(w.has_value());
  CHECK(w->welcome().agent_heartbeats());
  c->nextWhere([](const Envelope& e) { return e.has_heartbeat(); }, "a heartbeat from the agent");
}

TEST_CASE("a SIGINT request reaches each rank once, without a SIGTERM before it", "[agent][signals]") {
  Fixture f;
  auto c = f.welcomedClient();
  c->send(launchSh("job-i", {"trap 'echo got-INT; exit 0' INT; trap 'echo got-TERM; exit 0' TERM; echo ready; "
                             "while :; do sleep 0.05; done"}));
  c->nextWhere([](const Envelope& e) { return e.has_output(); }, "ready");
  Envelope sig;
  sig.mutable_signal()->set_job_id("job-i");
  sig.mutable_signal()->set_signal(SIGINT);
  c->send(sig);
  JobResult r = collect(*c, 1);
  CHECK(r.out[0] == "got-INT\n");
  CHECK(r.exited[0].exit_code() == 0);
}
