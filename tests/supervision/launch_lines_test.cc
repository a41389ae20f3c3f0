#include <catch2/catch.hpp>

#include <csignal>

#include "common/control_line.h"
#include "common/error.h"

using namespace dsrun;

TEST_CASE("controlLine and parseControlLine round-trip every control signal", "[common][control]") {
  for (int signal : controlSignals()) {
    const std::string line = controlLine(signal);
    REQUIRE(line.back() == '\n');
    CHECK(parseControlLine(line.substr(0, line.size() - 1)) == signal);
  }
  CHECK(controlLine(SIGUSR1) == "signal USR1\n");
  CHECK(controlLine(SIGINT) == "signal INT\n");
}

TEST_CASE("parseControlLine accepts only the exact spelling controlLine writes", "[common][control]") {
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

TEST_CASE("controlSignalFromName takes names with or without SIG in any case", "[common][control]") {
  CHECK(controlSignalFromName("USR1") == SIGUSR1);
  CHECK(controlSignalFromName("sigterm") == SIGTERM);
  CHECK(controlSignalFromName("Int") == SIGINT);
  CHECK(controlSignalFromName("KILL") == std::nullopt);
  CHECK(controlSignalFromName("") == std::nullopt);
}

TEST_CASE("controlLine refuses a signal the channel does not carry, naming it", "[common][control]") {
  REQUIRE_THROWS_AS(controlLine(SIGKILL), ConfigError);
  REQUIRE_THROWS_WITH(controlLine(SIGKILL), Catch::Matchers::Contains("signal 9 cannot be sent to dsrun-launch"));
}

TEST_CASE("isStopSignal is true for INT, TERM and HUP only", "[common][control]") {
  CHECK(isStopSignal(SIGINT));
  CHECK(isStopSignal(SIGTERM));
  CHECK(isStopSignal(SIGHUP));
  CHECK_FALSE(isStopSignal(SIGUSR1));
  CHECK_FALSE(isStopSignal(SIGUSR2));
}
