#include <catch2/catch.hpp>

#include <csignal>

#include "supervision/launch_lines.h"
#include "common/error.h"

using namespace dsrun;

TEST_CASE("controlLine and parseControlLine round-trip every control signal", "[supervision][control]") {
  for (int signal : controlSignals()) {
    const std::string line = controlLine(signal);
    REQUIRE(line.back() == '\n');
    CHECK(parseControlLine(line.substr(0, line.size() - 1)) == signal);
  }
  CHECK(controlLine(SIGUSR1) == "signal USR1\n");
  CHECK(controlLine(SIGINT) == "signal INT\n");
}

TEST_CASE("parseControlLine accepts only the exact spelling controlLine writes", "[supervision][control]") {
  std::string line;
  std::optional<int> expected;
  std::tie(line, expected) = GENERATE(table<std::string, std::optional<int>>({
      {"signal TERM", SIGTERM},
      {"signal HUP\r", SIGHUP},
      {"signal USR2", SIGUSR2},
      {"signal SIGUSR2", std::nullopt},
      {"signal usr1", std::nullopt},
      {"signal  USR1", std::nullopt},
      {"signal USR1 now", std::nullopt},
      {"signal KILL", std::nullopt},
      {"signal 10", std::nullopt},
      {"signal", std::nullopt},
      {"", std::nullopt},
      {"resize 80x24", std::nullopt},
  }));
  CAPTURE(line);
  CHECK(parseControlLine(line) == expected);
}

TEST_CASE("controlSignalFromName takes names with or without SIG in any case", "[supervision][control]") {
  CHECK(controlSignalFromName("USR1") == SIGUSR1);
  CHECK(controlSignalFromName("sigterm") == SIGTERM);
  CHECK(controlSignalFromName("Int") == SIGINT);
  CHECK(controlSignalFromName("KILL") == std::nullopt);
  CHECK(controlSignalFromName("") == std::nullopt);
}

TEST_CASE("controlLine refuses a signal the channel does not carry, naming it", "[supervision][control]") {
  REQUIRE_THROWS_AS(controlLine(SIGKILL), ConfigError);
  REQUIRE_THROWS_WITH(controlLine(SIGKILL), Catch::Matchers::Contains("signal 9 cannot be sent to dsrun-launch"));
}

TEST_CASE("isStopSignal is true for INT, TERM and HUP only", "[supervision][control]") {
  CHECK(isStopSignal(SIGINT));
  CHECK(isStopSignal(SIGTERM));
  CHECK(isStopSignal(SIGHUP));
  CHECK_FALSE(isStopSignal(SIGUSR1));
  CHECK_FALSE(isStopSignal(SIGUSR2));
}

TEST_CASE("the node-starting line of an elastic ssh round is recognised, and no failure line is",
          "[supervision][launch_lines]") {
  const std::string line = dsrun::nodeStartingLine(2, "dsn3", 4, 5);
  CHECK(line == "dsrun-launch: node 2 (dsn3) starting ranks 4-5");
  CHECK(dsrun::isNodeStartingLine(line));
  CHECK_FALSE(dsrun::isNodeStartingLine("dsrun-launch: dsn3 (node 2, ranks 4-5) exited with code 1"));
  CHECK_FALSE(dsrun::isNodeStartingLine("dsn3:4 | dsrun-launch: node 2 (dsn3) starting ranks 4-5"));
}

TEST_CASE("each line dsrun-launch writes is read back by dsrun's parser of it", "[supervision][launch_lines]") {
  const std::optional<RankFailure> failed = parseFailureLine(rankFailureLine(5, "dsn3", 1234, "exited with code 3"));
  REQUIRE(failed);
  CHECK((failed->rank == 5 && failed->host == "dsn3" && failed->pid == 1234 && failed->exitCode == 3));
  const std::optional<RankFailure> node = parseFailureLine(nodeExitLine("dsn3", 2, 4, 5, 7));
  REQUIRE(node);
  CHECK((node->rank == -1 && node->host == "dsn3" && node->exitCode == 7));
  const std::optional<RankFailure> clean = parseCleanExitLine(cleanExitLine(1, "dsn2", 77));
  REQUIRE(clean);
  CHECK((clean->rank == 1 && clean->host == "dsn2" && clean->pid == 77 && clean->exitCode == 0));
  const std::optional<RootCauseLine> tail = parseRootCauseLine(rootCauseTailLine(5, "dsn3", "ValueError: x"));
  REQUIRE(tail);
  CHECK((tail->rank == 5 && !tail->isLog && tail->text == "ValueError: x"));
  const std::optional<RootCauseLine> log = parseRootCauseLine(rootCauseLogLine(5, "dsn3", "/tmp/r/5.log"));
  REQUIRE(log);
  CHECK((log->rank == 5 && log->isLog && log->text == "/tmp/r/5.log"));
  CHECK(isHeartbeatLine(heartbeatLine().substr(0, heartbeatLine().size() - 1)));
  CHECK_FALSE(parseControlLine(heartbeatLine().substr(0, heartbeatLine().size() - 1)));
}
