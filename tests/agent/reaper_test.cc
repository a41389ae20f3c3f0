// The Reaper with real children: each exit is reported once with its wait status, also when one
// SIGCHLD stands for several children.
#include "agent/reaper.h"

#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <map>

#include "supervision/posix_spawner.h"
#include "tests/agent/run_until.h"

using dsrun::agent::Reaper;
using testing::runUntil;

namespace {

pid_t spawnSh(dsrun::PosixSpawner& spawner, const std::string& script) {
  dsrun::SpawnOptions options;
  options.output = dsrun::OutputMode::Inherit;
  return spawner.spawn(dsrun::Command{{"/bin/sh", "-c", script}, {{"PATH", "/usr/bin:/bin"}}, ""}, options).pid;
}

}  // namespace

TEST_CASE("the reaper reports every exited child with its wait status", "[agent][reaper]") {
  boost::asio::io_context io;
  std::map<pid_t, int> reaped;
  Reaper reaper(io, [&](pid_t pid, int status) {
    CHECK(reaped.count(pid) == 0);  // once
    reaped[pid] = status;
  });
  dsrun::PosixSpawner spawner;
  const pid_t code = spawnSh(spawner, "exit 7");
  const pid_t killed = spawnSh(spawner, "kill -TERM $$");
  // Several children ending at once may raise one SIGCHLD: all of them must still be reaped.
  std::vector<pid_t> burst;
  for (int i = 0; i < 5; ++i) burst.push_back(spawnSh(spawner, "exit 0"));
  runUntil(io, [&] { return reaped.size() == 7; }, "seven children to be reaped");
  REQUIRE(WIFEXITED(reaped[code]));
  CHECK(WEXITSTATUS(reaped[code]) == 7);
  REQUIRE(WIFSIGNALED(reaped[killed]));
  CHECK(WTERMSIG(reaped[killed]) == SIGTERM);
  for (pid_t pid : burst) CHECK(reaped.count(pid) == 1);
}

TEST_CASE("a closed reaper leaves the loop with no work", "[agent][reaper]") {
  boost::asio::io_context io;
  Reaper reaper(io, [](pid_t, int) {});
  reaper.close();
  // Without close() the SIGCHLD wait would keep the loop busy for the whole second.
  io.run_for(std::chrono::seconds(1));
  CHECK(io.stopped());
}
