// The JobTable against a FakeSpawner: which rank of which job is started, signalled, reported and
// given up, stepped on the loop, with exits told to it as the Reaper would. One test runs real /bin/sh
// ranks to see output reach the owner before the exit.
#include "agent/job_table.h"

#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>
#include <string>
#include <vector>

#include "agent/reaper.h"
#include "tests/supervision/fake_spawner.h"
#include "supervision/posix_spawner.h"
#include "tests/agent/recording_job_events.h"
#include "tests/agent/run_until.h"

using Catch::Matchers::Contains;
using dsrun::FakeSpawner;
using dsrun::RankSpec;
using dsrun::agent::JobSpec;
using dsrun::agent::JobTable;
using dsrun::agent::OutputStream;
using testing::RecordingJobEvents;
using testing::runUntil;
namespace event = dsrun::agent::event;
using namespace std::chrono_literals;

namespace {

JobSpec job(const std::string& id, const std::vector<std::vector<std::string>>& argvs) {
  JobSpec spec;
  spec.id = id;
  for (size_t r = 0; r < argvs.size(); ++r) {
    RankSpec rank;
    rank.rank = static_cast<int>(r);
    rank.command.argv = argvs[r];
    rank.command.env["RANK"] = std::to_string(r);
    spec.ranks.push_back(rank);
  }
  return spec;
}

JobSpec job(const std::string& id, size_t ranks) {
  return job(id, std::vector<std::vector<std::string>>(ranks, {"train.py"}));
}

int exitedWith(int code) { return W_EXITCODE(code, 0); }
int killedBy(int signal) { return signal; }  // a wait status of a signalled process is its signal number

struct Table {
  explicit Table(dsrun::Spawner& s) : table(io, s, events, options()) {}
  static JobTable::Options options() {
    JobTable::Options o;
    o.killGrace = 20ms;
    o.killWait = 20ms;
    o.drainAfterExit = 20ms;
    o.hostName = "test-node";
    o.baseEnv = {{"HOME", "/home/agent"}, {"RANK", "agent's own"}};
    return o;
  }
  boost::asio::io_context io;
  RecordingJobEvents events;
  JobTable table;
};

}  // namespace

TEST_CASE("every rank of a job is reported started, then exited once reaped, and the job leaves the table",
          "[agent][job_table]") {
  FakeSpawner spawner;
  Table t(spawner);
  t.table.launch(1, job("job-a", 2));
  const auto started = t.events.of<event::Started>(1);
  REQUIRE(started.size() == 2);
  CHECK(started[0].jobId == "job-a");
  CHECK(started[0].rank == 0);
  CHECK(started[0].pid == spawner.spawned[0].pid);
  CHECK(started[1].pid == spawner.spawned[1].pid);
  CHECK(t.table.jobIds() == std::set<std::string>{"job-a"});
  CHECK(t.table.liveRankCount() == 2);

  t.table.onReaped(spawner.spawned[0].pid, exitedWith(0));
  t.table.onReaped(spawner.spawned[1].pid, exitedWith(3));
  const auto exited = t.events.of<event::Exited>(1);
  REQUIRE(exited.size() == 2);
  CHECK(exited[0].rank == 0);
  CHECK_FALSE(exited[0].signal.has_value());
  CHECK(exited[0].exitCode == 0);
  CHECK(exited[1].rank == 1);
  CHECK(exited[1].exitCode == 3);
  CHECK(exited[1].pid == spawner.spawned[1].pid);
  t.io.poll();
  CHECK(t.table.jobIds().empty());
  CHECK(t.table.liveRankCount() == 0);
}

TEST_CASE("a rank runs with the agent's environment under the launcher's variables", "[agent][job_table]") {
  FakeSpawner spawner;
  Table t(spawner);
  t.table.launch(1, job("job-env", 1));
  REQUIRE(spawner.spawned.size() == 1);
  const auto& env = spawner.spawned[0].command.env;
  CHECK(env.at("HOME") == "/home/agent");
  CHECK(env.at("RANK") == "0");
  CHECK(spawner.spawned[0].options.output == dsrun::OutputMode::Pipe);
}

TEST_CASE("a rank's death kills what it left in its process group and leaves its siblings to the launcher",
          "[agent][job_table]") {
  FakeSpawner spawner;
  Table t(spawner);
  t.table.launch(1, job("job-gang", 3));
  const pid_t dead = spawner.spawned[1].pid;
  t.table.onReaped(dead, exitedWith(1));
  CHECK(spawner.signalsTo(dead) == std::vector<int>{SIGKILL});
  // A rank's failure is the launcher's to judge: it stops the job with a SignalRequest.
  CHECK(spawner.signalsTo(spawner.spawned[0].pid).empty());
  CHECK(spawner.signalsTo(spawner.spawned[2].pid).empty());
  CHECK(t.table.liveRankCount() == 2);
  CHECK(t.events.of<event::Exited>(1).size() == 1);
}

TEST_CASE("a stop asked by the launcher signals every live rank once, then SIGKILL after the grace",
          "[agent][job_table]") {
  FakeSpawner spawner;
  Table t(spawner);
  t.table.launch(1, job("job-stop", 2));
  const pid_t a = spawner.spawned[0].pid;
  const pid_t b = spawner.spawned[1].pid;
  t.table.signalJob("job-stop", SIGINT);
  CHECK(spawner.signalsTo(a) == std::vector<int>{SIGINT});
  CHECK(spawner.signalsTo(b) == std::vector<int>{SIGINT});
  t.table.onReaped(a, killedBy(SIGINT));  // rank 0 honours Ctrl-C, rank 1 ignores it
  runUntil(t.io, [&] { return spawner.signalsTo(b).size() == 2; }, "SIGKILL after the grace");
  CHECK(spawner.signalsTo(b) == std::vector<int>{SIGINT, SIGKILL});
  CHECK(spawner.signalsTo(a) == std::vector<int>{SIGINT, SIGKILL});  // its group, when it was reaped
  t.table.onReaped(b, killedBy(SIGKILL));
  const auto exited = t.events.of<event::Exited>(1);
  REQUIRE(exited.size() == 2);
  CHECK(exited[0].signal == SIGINT);
  CHECK(exited[1].signal == SIGKILL);
  t.io.poll();
  CHECK(t.table.jobIds().empty());
}

TEST_CASE("a job killed by the launcher gets SIGKILL at once; SIGUSR1 is only passed on", "[agent][job_table]") {
  FakeSpawner spawner;
  Table t(spawner);
  t.table.launch(1, job("job-kill", 2));
  t.table.signalJob("job-kill", SIGUSR1);
  t.table.signalJob("job-kill", SIGKILL);
  for (const auto& s : spawner.spawned) CHECK(spawner.signalsTo(s.pid) == std::vector<int>{SIGUSR1, SIGKILL});
  t.table.signalJob("no-such-job", SIGTERM);  // ignored
  CHECK(spawner.sent.size() == 4);
}

TEST_CASE("a rank still alive the kill wait after SIGKILL (D state) is given up and its job ends",
          "[agent][job_table]") {
  FakeSpawner spawner;
  Table t(spawner);
  t.table.launch(7, job("job-d", 2));
  const pid_t stuck = spawner.spawned[1].pid;
  t.table.signalJob("job-d", SIGTERM);
  t.table.onReaped(spawner.spawned[0].pid, killedBy(SIGTERM));
  // The stuck rank is never reaped: SIGKILL after the grace, given up after the kill wait.
  runUntil(t.io, [&] { return !t.events.of<event::GivenUp>(7).empty(); }, "the stuck rank to be given up");
  CHECK(spawner.signalsTo(stuck) == std::vector<int>{SIGTERM, SIGKILL});
  const auto givenUp = t.events.of<event::GivenUp>(7);
  REQUIRE(givenUp.size() == 1);
  CHECK(givenUp[0].rank == 1);
  CHECK(givenUp[0].pid == stuck);
  CHECK_FALSE(givenUp[0].state.empty());
  runUntil(t.io, [&] { return t.table.jobIds().empty(); }, "the job to end");
  CHECK(t.table.liveRankCount() == 0);
}

TEST_CASE("two launchers' jobs are kept apart: events, listings and stops", "[agent][job_table]") {
  FakeSpawner spawner;
  Table t(spawner);
  t.table.launch(1, job("job-of-1", 1));
  t.table.launch(2, job("job-of-2", 1));
  const pid_t of1 = spawner.spawned[0].pid;
  const pid_t of2 = spawner.spawned[1].pid;
  CHECK(t.table.jobIdsOf(1) == std::set<std::string>{"job-of-1"});
  CHECK(t.table.jobIdsOf(2) == std::set<std::string>{"job-of-2"});
  REQUIRE(t.events.of<event::Started>(1).size() == 1);
  CHECK(t.events.of<event::Started>(1)[0].jobId == "job-of-1");
  REQUIRE(t.events.of<event::Started>(2).size() == 1);
  CHECK(t.events.of<event::Started>(2)[0].jobId == "job-of-2");

  t.table.stopJobsOf(1, "connection closed");
  CHECK(spawner.signalsTo(of1) == std::vector<int>{SIGTERM});
  CHECK(spawner.signalsTo(of2).empty());
  t.table.onReaped(of1, killedBy(SIGTERM));
  CHECK(t.events.of<event::Exited>(1).size() == 1);
  CHECK(t.events.of<event::Exited>(2).empty());
  t.io.poll();
  CHECK(t.table.jobIds() == std::set<std::string>{"job-of-2"});
}

TEST_CASE("a rank that cannot be started is reported with host, rank and errno, and its started siblings stopped",
          "[agent][job_table]") {
  FakeSpawner spawner;
  spawner.failNext("missing.py", ENOENT);
  Table t(spawner);
  t.table.launch(1, job("job-bad", {{"train.py"}, {"missing.py"}, {"train.py"}}));
  const auto failed = t.events.of<event::LaunchFailed>(1);
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].jobId == "job-bad");
  CHECK_THAT(failed[0].message, Contains("test-node rank 1: ") && Contains("spawn 'missing.py'") &&
                                    Contains("No such file or directory"));
  REQUIRE(spawner.spawned.size() == 1);  // rank 2 is never tried
  CHECK(spawner.signalsTo(spawner.spawned[0].pid) == std::vector<int>{SIGTERM});
  t.table.onReaped(spawner.spawned[0].pid, killedBy(SIGTERM));
  t.io.poll();
  CHECK(t.table.jobIds().empty());
}

TEST_CASE("stopAll stops every job and calls back once no rank is left", "[agent][job_table]") {
  FakeSpawner spawner;
  Table t(spawner);
  t.table.launch(1, job("job-1", 1));
  t.table.launch(2, job("job-2", 1));
  bool empty = false;
  t.table.stopAll([&] { empty = true; });
  for (const auto& s : spawner.spawned) CHECK(spawner.signalsTo(s.pid) == std::vector<int>{SIGTERM});
  t.table.onReaped(spawner.spawned[0].pid, killedBy(SIGTERM));
  t.io.poll();
  CHECK_FALSE(empty);
  t.table.onReaped(spawner.spawned[1].pid, killedBy(SIGTERM));
  runUntil(t.io, [&] { return empty; }, "stopAll's callback");
}

TEST_CASE("a real rank's output reaches its owner before its exit", "[agent][job_table]") {
  dsrun::PosixSpawner spawner;
  Table t(spawner);
  dsrun::agent::Reaper reaper(t.io, [&](pid_t pid, int status) { t.table.onReaped(pid, status); });
  t.table.launch(1, job("job-sh", {{"/bin/sh", "-c", "echo out; echo err >&2; exit 4"}}));
  runUntil(t.io, [&] { return !t.events.of<event::Exited>(1).empty(); }, "the rank's exit");
  std::string out, err;
  for (const auto& o : t.events.of<event::Output>(1)) (o.stream == OutputStream::Stdout ? out : err) += o.data;
  CHECK(out == "out\n");
  CHECK(err == "err\n");
  CHECK(std::holds_alternative<event::Exited>(t.events.events[1].back()));
  CHECK(t.events.of<event::Exited>(1)[0].exitCode == 4);
  reaper.close();
}
