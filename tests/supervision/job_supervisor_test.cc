#include <catch2/catch.hpp>

#include <signal.h>

#include <cerrno>
#include <string>
#include <vector>

#include "tests/supervision/fake_spawner.h"
#include "supervision/job_supervisor.h"

using namespace dsrun;
using Catch::Matchers::Equals;

namespace {

/// One thing that happens to the supervisor, at a made-up time.
struct Event {
  enum Kind { Exit, Killed, Signal, Tick } kind;
  int rank;      ///< Exit/Killed: which rank (its pid is 1000 + rank)
  int value;     ///< Exit: code; Killed: signal; Signal: signal
  double at;     ///< seconds
};
Event exits(int rank, int code, double at) { return {Event::Exit, rank, code, at}; }
Event killed(int rank, int signal, double at) { return {Event::Killed, rank, signal, at}; }
Event signalled(int signal, double at) { return {Event::Signal, -1, signal, at}; }
Event tick(double at) { return {Event::Tick, -1, 0, at}; }

/// A table row: three ranks started at t=0, then `events`.
struct Scenario {
  std::string name;
  double exitTimeoutS;
  std::vector<Event> events;
  std::vector<std::vector<int>> signals;  ///< per rank, every signal its group received, in order
  int exitCode;
  bool done;
  std::vector<std::string> notices;
};

std::vector<RankSpec> threeRanks() {
  std::vector<RankSpec> ranks(3);
  for (int i = 0; i < 3; ++i) {
    ranks[i].rank = i;
    ranks[i].localRank = i;
    ranks[i].host = "localhost";
    ranks[i].command.argv = {"/bin/rank", std::to_string(i)};
  }
  return ranks;
}

void apply(JobSupervisor& supervisor, const Event& e) {
  switch (e.kind) {
    case Event::Exit: supervisor.onExit(1000 + e.rank, e.value << 8, e.at); break;
    case Event::Killed: supervisor.onExit(1000 + e.rank, e.value, e.at); break;
    case Event::Signal: supervisor.onSignal(e.value, e.at); break;
    case Event::Tick: supervisor.onTime(e.at); break;
  }
}

const int K = SIGKILL;
const int T = SIGTERM;
const int U1 = SIGUSR1;
const int U2 = SIGUSR2;

}  // namespace

TEST_CASE("JobSupervisor stops, forwards and reports as the table says", "[common][local]") {
  Scenario s = GENERATE(values<Scenario>({
      {"every rank exits cleanly: only the leftovers of each group are killed", -1,
       {exits(0, 0, 1), exits(2, 0, 2), exits(1, 0, 3)},
       {{K}, {K}, {K}}, 0, true, {}},
      {"a rank exiting 3 terminates its siblings and sets the code", -1,
       {exits(1, 3, 1), killed(0, T, 1.1), killed(2, T, 1.2)},
       {{T, K}, {K}, {T, K}}, 3, true,
       {"dsrun: rank 1 (localhost pid 1001) exited with code 3; terminated 2 other ranks"}},
      {"a rank killed by a signal gives 128+signal", -1,
       {killed(2, SIGKILL, 1), killed(0, T, 2), exits(1, 0, 2)},
       {{T, K}, {T, K}, {K}}, 137, true,
       {"dsrun: rank 2 (localhost pid 1002) was killed by signal 9 (SIGKILL); terminated 2 other ranks"}},
      {"siblings that ignore SIGTERM get SIGKILL after the grace period, not before", -1,
       {exits(1, 3, 1), tick(30.9), tick(31), killed(0, K, 31.1), killed(2, K, 31.1)},
       {{T, K, K}, {K}, {T, K, K}}, 3, true,
       {"dsrun: rank 1 (localhost pid 1001) exited with code 3; terminated 2 other ranks"}},
      {"a failure while stopping neither re-signals nor replaces the first failure", -1,
       {exits(1, 3, 1), exits(0, 1, 1.5), killed(2, T, 1.6)},
       {{T, K}, {K}, {T, K}}, 3, true,
       {"dsrun: rank 1 (localhost pid 1001) exited with code 3; terminated 2 other ranks"}},
      {"a failure after a clean exit terminates only the ranks still running", -1,
       {exits(0, 0, 1), exits(1, 2, 2), killed(2, T, 2.1)},
       {{K}, {K}, {T, K}}, 2, true,
       {"dsrun: rank 1 (localhost pid 1001) exited with code 2; terminated 1 other rank"}},
      {"SIGTERM to dsrun reaches every rank once; ranks exiting 0 still give 128+15", -1,
       {signalled(T, 1), exits(0, 0, 1.1), exits(1, 0, 1.1), exits(2, 0, 1.2)},
       {{T, K}, {T, K}, {T, K}}, 143, true,
       {"dsrun: received SIGTERM; forwarded it to 3 ranks"}},
      {"SIGINT is forwarded as SIGINT; the first failing rank's code wins", -1,
       {signalled(SIGINT, 1), exits(2, 0, 1.1), exits(0, 1, 1.2), killed(1, SIGINT, 1.3)},
       {{SIGINT, K}, {SIGINT, K}, {SIGINT, K}}, 1, true,
       {"dsrun: received SIGINT; forwarded it to 3 ranks"}},
      {"a second signal sends SIGKILL at once", -1,
       {signalled(SIGHUP, 1), exits(0, 0, 1.5), signalled(SIGHUP, 2), killed(1, K, 2.1), killed(2, K, 2.1)},
       {{SIGHUP, K}, {SIGHUP, K, K}, {SIGHUP, K, K}}, 137, true,
       {"dsrun: received SIGHUP; forwarded it to 3 ranks",
        "dsrun: received SIGHUP while stopping; sent SIGKILL to 2 ranks"}},
      {"SIGUSR1 x2, SIGUSR2 x3, SIGTERM x1 (Slurm's test_116_25) reach every rank as often as sent", -1,
       {signalled(SIGUSR1, 1), signalled(SIGUSR2, 2), signalled(SIGUSR1, 3), signalled(SIGUSR2, 4),
        signalled(SIGUSR2, 5), signalled(T, 6), killed(0, T, 6.1), killed(1, T, 6.1), killed(2, T, 6.1)},
       {{U1, U2, U1, U2, U2, T, K}, {U1, U2, U1, U2, U2, T, K}, {U1, U2, U1, U2, U2, T, K}}, 143, true,
       {"dsrun: received SIGUSR1; forwarded it to 3 ranks", "dsrun: received SIGUSR2; forwarded it to 3 ranks",
        "dsrun: received SIGUSR1; forwarded it to 3 ranks", "dsrun: received SIGUSR2; forwarded it to 3 ranks",
        "dsrun: received SIGUSR2; forwarded it to 3 ranks", "dsrun: received SIGTERM; forwarded it to 3 ranks"}},
      {"SIGUSR1 alone stops nothing: the job ends as its ranks decide", -1,
       {signalled(SIGUSR1, 1), exits(0, 0, 2), exits(1, 0, 2), exits(2, 0, 2)},
       {{U1, K}, {U1, K}, {U1, K}}, 0, true, {"dsrun: received SIGUSR1; forwarded it to 3 ranks"}},
      {"the exit timeout stops the others once it has passed after the first clean exit", 5,
       {exits(0, 0, 1), tick(5.9), tick(6), killed(1, T, 6.1), exits(2, 0, 6.1)},
       {{K}, {T, K}, {T, K}}, 143, true,
       {"dsrun: exit timeout: rank 1 (localhost pid 1001), rank 2 (localhost pid 1002) still running 5s after "
        "rank 0 (localhost pid 1000) finished cleanly; stopped them, the job fails"}},
      {"without an exit timeout the others may run forever", -1,
       {exits(0, 0, 1), tick(1e6)},
       {{K}, {}, {}}, 0, false, {}},
      {"an exit timeout of 0 stops the others at the next tick", 0,
       {exits(2, 0, 1), tick(1), exits(0, 0, 1.1), exits(1, 0, 1.1)},
       {{T, K}, {T, K}, {K}}, 1, true,  // they exit 0 on SIGTERM, but were cut short: the job fails
       {"dsrun: exit timeout: rank 0 (localhost pid 1000), rank 1 (localhost pid 1001) still running 0s after "
        "rank 2 (localhost pid 1002) finished cleanly; stopped them, the job fails"}},
  }));
  INFO(s.name);
  std::vector<RankSpec> ranks = threeRanks();
  FakeSpawner spawner;
  JobSupervisor supervisor(ranks, SupervisorOptions{StopTimes::fromOptions(30, s.exitTimeoutS)}, spawner);
  for (size_t i = 0; i < ranks.size(); ++i) REQUIRE(supervisor.start(i, SpawnOptions{}, 0));
  std::vector<std::string> notices;
  for (const Event& e : s.events) {
    apply(supervisor, e);
    for (auto& line : supervisor.takeNotices()) notices.push_back(line);
  }
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r);
    CHECK(spawner.signalsTo(1000 + r) == s.signals[r]);
  }
  CHECK(supervisor.done() == s.done);
  if (s.done) CHECK(supervisor.exitCode() == s.exitCode);
  CHECK(notices == s.notices);
}

TEST_CASE("JobSupervisor asks to be woken at the kill deadline and the exit deadline", "[common][local]") {
  std::vector<RankSpec> ranks = threeRanks();
  FakeSpawner spawner;
  JobSupervisor supervisor(ranks, SupervisorOptions{StopTimes::fromOptions(10, 4)}, spawner);
  for (size_t i = 0; i < 3; ++i) supervisor.start(i, SpawnOptions{}, 0);
  CHECK_FALSE(supervisor.nextDeadline());
  supervisor.onExit(1000, 0, 2);
  REQUIRE(supervisor.nextDeadline());
  CHECK(*supervisor.nextDeadline() == Approx(6));
  supervisor.onExit(1001, 1 << 8, 3);  // a failure: now the kill deadline matters
  REQUIRE(supervisor.nextDeadline());
  CHECK(*supervisor.nextDeadline() == Approx(13));
  supervisor.onExit(1002, SIGTERM, 4);
  CHECK_FALSE(supervisor.nextDeadline());
  CHECK(supervisor.done());
}

TEST_CASE("JobSupervisor stops the started ranks when one cannot be spawned", "[common][local]") {
  std::vector<RankSpec> ranks = threeRanks();
  ranks[1].command.argv = {"python3", "train.py"};
  FakeSpawner spawner;
  spawner.failNext("python3", ENOENT);
  JobSupervisor supervisor(ranks, SupervisorOptions{}, spawner);
  REQUIRE(supervisor.start(0, SpawnOptions{}, 0));
  CHECK_FALSE(supervisor.start(1, SpawnOptions{}, 0));
  CHECK(supervisor.stopping());
  REQUIRE(supervisor.spawnError());
  CHECK_THAT(supervisor.spawnError()->what(), Equals("spawn 'python3': No such file or directory"));
  CHECK(spawner.signalsTo(1000) == std::vector<int>{SIGTERM});
  CHECK(spawner.spawned.size() == 1);
  CHECK_FALSE(supervisor.done());
  supervisor.onExit(1000, SIGTERM, 1);
  CHECK(supervisor.done());
  CHECK(supervisor.takeNotices().empty());  // the error itself is the report
}

TEST_CASE("JobSupervisor reports a lone failing rank without mentioning siblings", "[common][local]") {
  std::vector<RankSpec> ranks = threeRanks();
  ranks.resize(1);
  FakeSpawner spawner;
  JobSupervisor supervisor(ranks, SupervisorOptions{}, spawner);
  supervisor.start(0, SpawnOptions{}, 0);
  supervisor.onExit(1000, 7 << 8, 1);
  CHECK(supervisor.takeNotices() == std::vector<std::string>{"dsrun: rank 0 (localhost pid 1000) exited with code 7"});
  CHECK(supervisor.done());
  CHECK(supervisor.exitCode() == 7);
}

TEST_CASE("JobSupervisor arms the exit timeout even if a rank exits before the others start",
          "[common][local]") {
  std::vector<RankSpec> ranks = threeRanks();
  FakeSpawner spawner;
  JobSupervisor supervisor(ranks, SupervisorOptions{StopTimes::fromOptions(30, 2)}, spawner);
  supervisor.start(0, SpawnOptions{}, 0);
  supervisor.onExit(1000, 0, 1);
  supervisor.start(1, SpawnOptions{}, 1.5);
  supervisor.start(2, SpawnOptions{}, 1.5);
  REQUIRE(supervisor.nextDeadline());
  CHECK(*supervisor.nextDeadline() == Approx(3));
  supervisor.onTime(3);
  CHECK(supervisor.stopping());
  CHECK(spawner.signalsTo(1001) == std::vector<int>{SIGTERM});
  CHECK(spawner.signalsTo(1002) == std::vector<int>{SIGTERM});
}

TEST_CASE("JobSupervisor announces every clean exit when asked (dsrun-launch's job-wide exit timeout)",
          "[common][local]") {
  std::vector<RankSpec> ranks = threeRanks();
  FakeSpawner spawner;
  JobSupervisor supervisor(ranks, SupervisorOptions{StopTimes::fromOptions(30, 2), true}, spawner);
  for (size_t i = 0; i < 3; ++i) supervisor.start(i, SpawnOptions{}, 0);
  supervisor.onExit(1001, 0, 1);
  supervisor.onExit(1000, 0, 1.5);
  // dsrun names the ranks its exit timeout stops from these lines: every clean one must be there.
  CHECK(supervisor.takeNotices() == std::vector<std::string>{"dsrun: rank 1 (localhost pid 1001) finished cleanly",
                                                             "dsrun: rank 0 (localhost pid 1000) finished cleanly"});
  JobSupervisor quiet(ranks, SupervisorOptions{StopTimes::fromOptions(30, 2)}, spawner);
  for (size_t i = 0; i < 3; ++i) quiet.start(i, SpawnOptions{}, 0);
  quiet.onExit(1003, 0, 1);
  CHECK(quiet.takeNotices().empty());
}

TEST_CASE("JobSupervisor names an OOM kill of a failing rank, and only for SIGKILL", "[common][local]") {
  std::vector<RankSpec> ranks = threeRanks();
  FakeSpawner spawner;
  SupervisorOptions options;
  std::vector<pid_t> asked;
  options.oomKilled = [&](pid_t pid) -> std::optional<std::string> {
    asked.push_back(pid);
    return std::string("kernel log");
  };
  JobSupervisor supervisor(ranks, options, spawner);
  for (size_t i = 0; i < 3; ++i) supervisor.start(i, SpawnOptions{}, 0);
  supervisor.onExit(1001, SIGKILL, 1);
  CHECK(supervisor.takeNotices() ==
        std::vector<std::string>{"dsrun: rank 1 (localhost pid 1001) was killed by signal 9 (SIGKILL): out of memory "
                                 "(the kernel's OOM killer, per the kernel log); terminated 2 other ranks"});
  CHECK(supervisor.exitCode() == 137);
  JobSupervisor plain(ranks, options, spawner);
  for (size_t i = 0; i < 3; ++i) plain.start(i, SpawnOptions{}, 0);
  plain.onExit(1003, SIGSEGV, 1);
  CHECK(asked == std::vector<pid_t>{1001});
}

TEST_CASE("JobSupervisor is not done until every rank has been started", "[common][local]") {
  std::vector<RankSpec> ranks = threeRanks();
  FakeSpawner spawner;
  JobSupervisor supervisor(ranks, SupervisorOptions{}, spawner);
  supervisor.start(0, SpawnOptions{}, 0);
  supervisor.onExit(1000, 0, 1);
  CHECK_FALSE(supervisor.done());
}

TEST_CASE("JobSupervisor ignores pids that are not ranks (re-parented orphans)", "[common][local]") {
  std::vector<RankSpec> ranks = threeRanks();
  FakeSpawner spawner;
  JobSupervisor supervisor(ranks, SupervisorOptions{}, spawner);
  for (size_t i = 0; i < 3; ++i) supervisor.start(i, SpawnOptions{}, 0);
  supervisor.onExit(4242, 1 << 8, 1);
  CHECK_FALSE(supervisor.stopping());
  CHECK(spawner.sent.empty());
  CHECK(supervisor.runningCount() == 3);
}

TEST_CASE("JobSupervisor passes each rank's Command and options to the spawner", "[common][local]") {
  std::vector<RankSpec> ranks = threeRanks();
  FakeSpawner spawner;
  JobSupervisor supervisor(ranks, SupervisorOptions{}, spawner);
  SpawnOptions options;
  options.cores = {2, 3};
  supervisor.start(0, options, 0);
  REQUIRE(spawner.spawned.size() == 1);
  CHECK(spawner.spawned[0].command == ranks[0].command);
  CHECK(spawner.spawned[0].options.cores == std::vector<int>{2, 3});
}

TEST_CASE("JobSupervisor::abort sends SIGKILL to every running rank", "[common][local]") {
  std::vector<RankSpec> ranks = threeRanks();
  FakeSpawner spawner;
  JobSupervisor supervisor(ranks, SupervisorOptions{}, spawner);
  for (size_t i = 0; i < 3; ++i) supervisor.start(i, SpawnOptions{}, 0);
  supervisor.onExit(1001, 0, 1);
  supervisor.abort();
  CHECK(spawner.signalsTo(1000) == std::vector<int>{K});
  CHECK(spawner.signalsTo(1001) == std::vector<int>{K});  // from its exit, not from abort
  CHECK(spawner.signalsTo(1002) == std::vector<int>{K});
}

TEST_CASE("JobSupervisor names a rank alive killWaitS after SIGKILL and gives it up", "[common][local]") {
  std::vector<RankSpec> ranks = threeRanks();
  FakeSpawner spawner;
  SupervisorOptions options;
  options.stop.killGrace = Seconds(1);
  options.killWaitS = 4;
  options.stateOf = [](pid_t pid) { return pid == 1001 ? std::string("D (disk sleep)") : std::string(); };
  JobSupervisor supervisor(ranks, options, spawner);
  for (size_t i = 0; i < 3; ++i) supervisor.start(i, SpawnOptions{}, 0);
  supervisor.onExit(1000, 3 << 8, 1);
  supervisor.onExit(1002, SIGTERM, 1.2);
  supervisor.onTime(2);  // SIGKILL to rank 1, which never reports its exit (state D)
  CHECK(spawner.signalsTo(1001) == std::vector<int>{SIGTERM, SIGKILL});
  CHECK_FALSE(supervisor.done());
  supervisor.takeNotices();
  supervisor.onTime(6);
  REQUIRE(supervisor.done());
  CHECK(supervisor.exitCode() == 3);
  CHECK(supervisor.abandonedPids() == std::vector<pid_t>{1001});
  const std::vector<std::string> notices = supervisor.takeNotices();
  REQUIRE(notices.size() == 1);
  CHECK_THAT(notices[0], Catch::Matchers::StartsWith("dsrun: rank 1 (localhost pid 1001) is still alive 4s after "
                                                     "SIGKILL, in state D (disk sleep); giving up on it"));
}
