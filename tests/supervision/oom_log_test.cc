#include "supervision/oom_log.h"

#include <catch2/catch.hpp>

using dsrun::OomLog;

TEST_CASE("OomLog finds the OOM killer's line for exactly the given pid", "[common][oom]") {
  const std::string log =
      "6,1234,5678,-;Memory cgroup out of memory: Killed process 26141 (python3) total-vm:421000kB, anon-rss:65000kB\n"
      "6,1235,5679,-;oom_reaper: reaped process 26141 (python3), now anon-rss:0kB\n";
  CHECK(OomLog::kernelLogNamesPid(log, 26141));
  CHECK_FALSE(OomLog::kernelLogNamesPid(log, 2614));
  CHECK_FALSE(OomLog::kernelLogNamesPid(log, 261410));
  CHECK(OomLog::kernelLogNamesPid("Out of memory: Killed process 7 (a.out) total-vm:1kB", 7));
}

TEST_CASE("OomLog reads oom_kill from cgroup v2 memory.events and v1 memory.oom_control", "[common][oom]") {
  CHECK(OomLog::oomKillCount("low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n") == 2);
  CHECK(OomLog::oomKillCount("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n") == 1);
  CHECK_FALSE(OomLog::oomKillCount("oom_kill_disable 0\nunder_oom 0\n"));
}
