#include "launcher/backends/ssh/ssh_round.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>

#include "common/env_contract.h"
#include "launcher/backends/node_launch_command.h"
#include "common/error.h"
#include "launcher/node_launch/node_launch_args.h"
#include "plan_fixture.h"

using dsrun::launcher::RoundOutcome;
using dsrun::launcher::SessionEnd;
using dsrun::launcher::SshRoundFacts;
using dsrun::launcher::SshStopEvent;
using End = RoundOutcome::End;
using Strings = std::vector<std::string>;

TEST_CASE("classifySessionEnd: an exit status is an exit, a timed-out socket is silent, the rest is closed",
          "[launcher][ssh_round]") {
  const std::string timedOut = std::string("Socket error: ") + std::strerror(ETIMEDOUT);
  auto [status, error, expected] = GENERATE_COPY(table<int, std::string, SessionEnd>({
      {0, "", SessionEnd::Exited},
      {3, "", SessionEnd::Exited},
      {143, timedOut, SessionEnd::Exited},
      {-1, timedOut, SessionEnd::Silent},
      {-1, "Socket error: disconnected", SessionEnd::Closed},
      {-1, std::string("Socket error: ") + std::strerror(ECONNRESET), SessionEnd::Closed},
      {-1, "", SessionEnd::Closed},
  }));
  CAPTURE(status, error);
  CHECK(dsrun::launcher::classifySessionEnd(status, error) == expected);
}

TEST_CASE("lostHostCause says silent with the heartbeat budget, or how the session closed", "[launcher][ssh_round]") {
  CHECK(dsrun::launcher::lostHostCause("dsn3:22", "dsn3", SessionEnd::Silent, "Socket error: Connection timed out",
                                       500, 5) ==
        "ssh dsn3:22: host dsn3 silent (our heartbeats unacknowledged; heartbeat budget 2500 ms = 5 x 500 ms)");
  CHECK(dsrun::launcher::lostHostCause("dsn2:22", "dsn2", SessionEnd::Closed, "", 500, 5) ==
        "ssh dsn2:22: dsrun-launch on dsn2 ended without an exit status (killed, or its sshd was)");
  CHECK(dsrun::launcher::lostHostCause("dsn2:2222", "dsn2", SessionEnd::Closed, "Socket error: disconnected", 500, 5) ==
        "ssh dsn2:2222: connection to dsn2 lost (Socket error: disconnected)");
  CHECK_THROWS_AS(dsrun::launcher::lostHostCause("h:22", "h", SessionEnd::Exited, "", 500, 5), dsrun::InternalError);
}

TEST_CASE("sshRoundOutcome: the first event decides the cause, every lost host is listed", "[launcher][ssh_round]") {
  SshRoundFacts facts;
  facts.exitCode = 3;
  facts.events = {{"dsn2", "rank 1 on dsn2 (pid 7) exited with code 3", 3, false},
                  {"dsn3", "ssh dsn3:22: host dsn3 silent", 255, true}};
  RoundOutcome o = dsrun::launcher::sshRoundOutcome(facts);
  CHECK(o.end == End::Failed);
  CHECK(o.exitCode == 3);
  CHECK(o.cause == "rank 1 on dsn2 (pid 7) exited with code 3");
  CHECK(o.failedHosts == Strings{"dsn2"});
  CHECK(o.lostHosts == Strings{"dsn3"});

  facts.events = {{"dsn3", "ssh dsn3:22: host dsn3 silent", 255, true}};
  facts.exitCode = 255;
  o = dsrun::launcher::sshRoundOutcome(facts);
  CHECK(o.end == End::Failed);
  CHECK(o.failedHosts == Strings{"dsn3"});
  CHECK(o.lostHosts == Strings{"dsn3"});  // the controller reads "host lost"
}

TEST_CASE("sshRoundOutcome: a signal wins, then failures, then a rescale, then the exit code",
          "[launcher][ssh_round]") {
  const SshStopEvent failure{"dsn1", "rank 0 on dsn1 (pid 1) exited with code 1", 1, false};
  auto [signalled, events, rescaled, code, expected] =
      GENERATE_COPY(table<bool, std::vector<SshStopEvent>, bool, int, End>({
          {true, {failure}, true, 130, End::Signalled},
          {false, {failure}, true, 1, End::Failed},
          {false, {}, true, 0, End::Rescaled},
          {false, {}, false, 0, End::Completed},
          {false, {}, false, 2, End::Failed},
      }));
  SshRoundFacts facts;
  if (signalled) facts.signalled = 2;
  facts.events = events;
  facts.rescaled = rescaled;
  facts.exitCode = code;
  const RoundOutcome o = dsrun::launcher::sshRoundOutcome(facts);
  CHECK(o.end == expected);
  CHECK(o.exitCode == code);
  CHECK(o.lostHosts.empty());
}

TEST_CASE("an elastic ssh round exports each node's restart counter and torchrun's names", "[launcher][ssh_round]") {
  auto f = dsrun::launcher::test::makePlan("w0 slots=2\nw1 slots=1\n", {"--elastic_training", "--launcher", "ssh",
                                                                "--master_addr", "10.0.0.1", "train.py"});
  REQUIRE(f->plan.elastic);
  // planWorld sets torchrun's names on every job (count 0); the controller sets this round's count.
  CHECK(dsrun::launcher::elasticNodeExports(f->plan, 0).at("DSRUN_RESTART_COUNT") == "0");
  for (dsrun::launcher::PlannedRank& r : f->plan.ranks) r.env[dsrun::kEnvRestartCount] = "2";
  const dsrun::launcher::EnvMap node1 = dsrun::launcher::elasticNodeExports(f->plan, 1);
  CHECK(node1.at("DSRUN_RESTART_COUNT") == "2");
  CHECK(node1.at("GROUP_RANK") == "1");
  CHECK(node1.at("LOCAL_WORLD_SIZE") == "1");
  CHECK(node1.count("ROLE_RANK") == 0);  // per rank: dsrun-launch plans it on the node
  CHECK(dsrun::launcher::elasticNodeExports(f->plan, 0).at("LOCAL_WORLD_SIZE") == "2");
  f->plan.elastic.reset();
  CHECK(dsrun::launcher::elasticNodeExports(f->plan, 1).empty());
}

TEST_CASE("withStdinTimeout puts --stdin_timeout_ms right after --watch_stdin, before the program",
          "[launcher][ssh_round]") {
  CHECK(dsrun::launcher::withStdinTimeout(
            {"dsrun-launch", "--kill_grace_s=2", "--watch_stdin", "prog", "--watch_stdin"}, 2500) ==
        Strings{"dsrun-launch", "--kill_grace_s=2", "--watch_stdin", "--stdin_timeout_ms=2500", "prog", "--watch_stdin"});
  CHECK_THROWS_AS(dsrun::launcher::withStdinTimeout({"dsrun-launch", "prog"}, 2500), dsrun::InternalError);
}

TEST_CASE("dsrun-launch takes --stdin_timeout_ms in ms and refuses nonsense", "[launcher][node_launch]") {
  const auto a =
      dsrun::launcher::parseNodeLaunchArgs({"--world_info=e30=", "--watch_stdin", "--stdin_timeout_ms=2500", "prog"});
  CHECK(a.watchStdin);
  CHECK(a.stdinTimeoutMs == 2500);
  CHECK(dsrun::launcher::parseNodeLaunchArgs({"--world_info=e30=", "prog"}).stdinTimeoutMs == 0);
  CHECK_THROWS_WITH(dsrun::launcher::parseNodeLaunchArgs({"--world_info=e30=", "--stdin_timeout_ms=0", "prog"}),
                    Catch::Contains("--stdin_timeout_ms"));
}
