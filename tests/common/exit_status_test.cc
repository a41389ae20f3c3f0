#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>

#include "common/exit_status.h"

using namespace dsrun;

namespace {
int exited(int code) { return code << 8; }  // the layout waitpid() uses on Linux
int killedBy(int signal) { return signal; }
}  // namespace

TEST_CASE("exitCodeOf follows the shell: the code, or 128+signal", "[common][local]") {
  int status, code;
  std::string text;
  std::tie(status, code, text) = GENERATE(table<int, int, std::string>({
      {exited(0), 0, "exited with code 0"},
      {exited(3), 3, "exited with code 3"},
      {exited(255), 255, "exited with code 255"},
      {killedBy(SIGKILL), 137, "was killed by signal 9 (SIGKILL)"},
      {killedBy(SIGTERM), 143, "was killed by signal 15 (SIGTERM)"},
      {killedBy(SIGSEGV), 139, "was killed by signal 11 (SIGSEGV)"},
  }));
  REQUIRE(WIFEXITED(exited(3)));
  CHECK(exitCodeOf(status) == code);
  CHECK(describeWaitStatus(status) == text);
  CHECK(isFailure(status) == (code != 0));
}

TEST_CASE("signalName names known signals and numbers the rest", "[common][local]") {
  CHECK(signalName(SIGINT) == "SIGINT");
  CHECK(signalName(SIGHUP) == "SIGHUP");
  CHECK(signalName(200) == "signal 200");
}
