#include <catch2/catch.hpp>

#include <signal.h>

#include <string>
#include <vector>

#include "common/job_controller.h"

using namespace dsrun;
using Catch::Matchers::Contains;
using Action = JobDecision::Action;

namespace {

int exitedWith(int code) { return code << 8; }
int killedBy(int signal) { return signal; }

JobControllerOptions localOptions(double exitTimeoutS = -1) {
  JobControllerOptions options;
  options.killGraceS = 30;
  options.exitTimeoutS = exitTimeoutS;
  return options;
}

JobControllerOptions agentBackendOptions(double exitTimeoutS = -1) {
  JobControllerOptions options;
  options.killGraceS = std::nullopt;
  options.exitTimeoutS = exitTimeoutS;
  options.whileStopping = SignalWhileStopping::KillOnSecondSignal;
  options.stopCausedExitIsFailure = false;
  return options;
}

JobController started(size_t ranks, JobControllerOptions options) {
  JobController controller(ranks, options);
  for (size_t i = 0; i < ranks; ++i) controller.rankStarted(i);
  return controller;
}

TimedFailure failureAt(int64_t us, int code, const std::string& what, const std::string& host) {
  return TimedFailure{us, code, what, host};
}

}  // namespace

TEST_CASE("each job table row leads where it says", "[common][controller]") {
  for (const auto& row : kJobTransitions) {
    INFO(toString(row.from) << " --" << toString(row.event) << "-->");
    CHECK(nextState(kJobTransitions, row.from, row.event) == row.to);
  }
}

TEST_CASE("a job event missing from the table is a bug naming the state and the event", "[common][controller]") {
  auto [from, event, text] = GENERATE(table<JobState, JobEvent, std::string>({
      {JobState::Finished, JobEvent::AllStarted, "'all-started' in state 'finished'"},
      {JobState::Running, JobEvent::GraceExpired, "'grace-expired' in state 'running'"},
      {JobState::Starting, JobEvent::AllExited, "'all-exited' in state 'starting'"},
      {JobState::Killing, JobEvent::ExitTimeoutExpired, "'exit-timeout-expired' in state 'killing'"},
      {JobState::Running, JobEvent::SecondStopSignal, "'second-stop-signal' in state 'running'"},
  }));
  CHECK_FALSE(hasTransition(kJobTransitions, from, event));
  REQUIRE_THROWS_AS(nextState(kJobTransitions, from, event), InternalError);
  REQUIRE_THROWS_WITH(nextState(kJobTransitions, from, event), Contains(text));
}

TEST_CASE("a job goes starting, running, finished, or through stopping and killing", "[common][controller]") {
  JobController controller(2, localOptions());
  CHECK(controller.state() == JobState::Starting);
  controller.rankStarted(0);
  CHECK(controller.state() == JobState::Starting);
  controller.rankStarted(1);
  CHECK(controller.state() == JobState::Running);
  controller.onRankExit(0, exitedWith(3), 1);
  CHECK(controller.state() == JobState::Stopping);
  CHECK(controller.onTime(31).at(0).action == Action::Kill);
  CHECK(controller.state() == JobState::Killing);
  controller.onRankExit(1, killedBy(SIGKILL), 31.5);
  CHECK(controller.state() == JobState::Finished);
  CHECK(controller.done());

  JobController empty(0, localOptions());
  CHECK(empty.done());
}

TEST_CASE("the running count and the start of the job follow every slot's move, in any order",
          "[common][controller]") {
  // The counts are kept as the slots move (an 80,000-rank job asked for them by scanning every slot, per event).
  JobController controller(5, agentBackendOptions());
  for (size_t slot : {4, 0, 3, 1}) controller.rankStarted(slot);
  CHECK(controller.state() == JobState::Starting);  // slot 2 has not started
  CHECK(controller.runningCount() == 4);
  CHECK_THROWS_AS(controller.rankStarted(4), InternalError);
  controller.rankStarted(2);
  CHECK(controller.state() == JobState::Running);
  CHECK(controller.runningCount() == 5);
  controller.onRankGone(2, 1);
  controller.onRankGone(2, 1);  // once only
  CHECK(controller.runningCount() == 4);
  controller.onHostLost({0, 2, 4}, failureAt(2, 1, "agent w0 closed", "w0"), 2);  // 2 had already ended
  CHECK(controller.runningCount() == 2);
  CHECK(controller.running(1));
  CHECK(controller.running(3));
  controller.onRankExit(3, killedBy(SIGTERM), 3);
  CHECK(controller.runningCount() == 1);
  CHECK(controller.firstRunning() == 1u);
  controller.onRankExit(1, killedBy(SIGTERM), 3);
  CHECK(controller.runningCount() == 0);
  CHECK(controller.done());
}

TEST_CASE("the first failure stops every running rank with SIGTERM and SIGKILL after the grace",
          "[common][controller]") {
  JobController controller = started(3, localOptions());
  const JobDecision stop = controller.onRankExit(1, exitedWith(3), 2, "rank 1 exited with code 3", "a");
  CHECK(stop == JobDecision{Action::Stop, SIGTERM, 2, StopCause::Failure});
  CHECK(controller.terminated() == 2);
  REQUIRE(controller.nextDeadline());
  CHECK(*controller.nextDeadline() == Approx(32));
  CHECK(controller.onTime(31.9).empty());
  // A later failure is a consequence: no second stop.
  CHECK(controller.onRankExit(0, exitedWith(1), 3) == JobDecision{});
  CHECK(controller.onTime(32) == std::vector<JobDecision>{{Action::Kill, SIGKILL, 1}});
  controller.onRankExit(2, killedBy(SIGKILL), 32.1);
  CHECK(controller.done());
  CHECK(controller.exitCode() == 3);
  REQUIRE(controller.stopFailure());
  CHECK(controller.stopFailure()->what == "rank 1 exited with code 3");
}

TEST_CASE("the earliest failure in time is the root cause, whatever the order of the reports",
          "[common][controller]") {
  JobController controller = started(4, agentBackendOptions());
  // Rank 2's report arrives first, but rank 3 failed 40 ms earlier on another host.
  controller.onRankExit(2, exitedWith(1), 10, "rank 2 (w1 pid 5) exited with code 1", "w1", 1'000'040);
  controller.onRankExit(3, exitedWith(7), 10.1, "rank 3 (w2 pid 6) exited with code 7", "w2", 1'000'000);
  controller.onRankExit(0, killedBy(SIGTERM), 10.2, "", "w0");
  controller.onRankExit(1, killedBy(SIGTERM), 10.2, "", "w0");
  CHECK(controller.done());
  CHECK(controller.exitCode() == 7);
  CHECK(controller.failures().size() == 2);  // the SIGTERMed ranks did what they were asked
  CHECK(rootCauseLine(controller.failures(), controller.terminated()) ==
        "dsrun: rank 3 (w2 pid 6) exited with code 7; terminated 3 other ranks; 1 later failure counted as its "
        "consequence: rank 2 (w1 pid 5) exited with code 1");
}

TEST_CASE("exit codes: first failure, else the stop-caused exit, else 128+signal, else 0", "[common][controller]") {
  struct Row {
    std::string name;
    bool local;
    std::vector<std::pair<size_t, int>> exits;  ///< after SIGINT at t=1: slot, wait status
    int code;
  };
  Row row = GENERATE(values<Row>({
      {"every rank exits 0 after the signal: 128+signal", true, {{0, 0}, {1, 0}}, 130},
      {"agent backend: a rank killed by the forwarded signal decides", false, {{0, SIGINT}, {1, 0}}, 130},
      {"agent backend: a rank killed by SIGKILL of our stop decides when nothing failed", false,
       {{0, 0}, {1, SIGKILL}}, 137},
      {"agent backend: an own failure beats an earlier stop-caused exit", false,
       {{0, SIGINT}, {1, exitedWith(4)}}, 4},
      {"local: the first rank reaped with a failure decides, stop-caused or not", true,
       {{0, SIGINT}, {1, exitedWith(4)}}, 130},
      {"local: an own failure first", true, {{1, exitedWith(4)}, {0, SIGINT}}, 4},
  }));
  INFO(row.name);
  JobController controller = started(2, row.local ? localOptions() : agentBackendOptions());
  CHECK(controller.onSignal(SIGINT, 1) == JobDecision{Action::Stop, SIGINT, 2, StopCause::Signal});
  double t = 1;
  for (auto [slot, status] : row.exits) controller.onRankExit(slot, status, t += 0.1);
  REQUIRE(controller.done());
  CHECK(controller.exitCode() == row.code);

  JobController clean = started(1, localOptions());
  clean.onRankExit(0, 0, 1);
  CHECK(clean.exitCode() == 0);
}

TEST_CASE("what a stop signal does while stopping is the backend's choice", "[common][controller]") {
  SECTION("Kill (local, pdsh): any stop signal while stopping kills at once") {
    JobController controller = started(2, localOptions());
    controller.onRankExit(0, exitedWith(1), 1);
    CHECK(controller.onSignal(SIGTERM, 2) == JobDecision{Action::Kill, SIGKILL, 1});
    CHECK(controller.state() == JobState::Killing);
    CHECK_FALSE(controller.nextDeadline());
  }
  SECTION("KillOnSecondSignal (agent backend): the user's first signal still reaches the ranks") {
    JobController controller = started(2, agentBackendOptions());
    controller.onRankExit(0, exitedWith(1), 1);
    CHECK(controller.onSignal(SIGINT, 2) == JobDecision{Action::Stop, SIGINT, 1, StopCause::Signal});
    CHECK(controller.stopCause() == StopCause::Failure);  // the failure stopped it first
    CHECK(controller.onSignal(SIGINT, 3) == JobDecision{Action::Kill, SIGKILL, 1});
  }
  SECTION("Forward (the agent): passed on as is") {
    JobControllerOptions options;
    options.rankFailureStops = false;
    options.whileStopping = SignalWhileStopping::Forward;
    JobController controller = started(2, options);
    CHECK(controller.onStopSignal(SIGKILL, 1) == JobDecision{Action::Stop, SIGKILL, 2, StopCause::Signal});
    CHECK(controller.onStopSignal(SIGTERM, 2) == JobDecision{Action::Forward, SIGTERM, 2});
    CHECK(controller.state() == JobState::Stopping);
  }
}

TEST_CASE("on the agent a rank's failure stops nothing: the launcher decides", "[common][controller]") {
  JobControllerOptions options;
  options.rankFailureStops = false;
  options.whileStopping = SignalWhileStopping::Forward;
  JobController controller = started(2, options);
  CHECK(controller.onRankExit(0, exitedWith(9), 1) == JobDecision{});
  CHECK(controller.state() == JobState::Running);
  CHECK(controller.requestStop(SIGTERM, 2) == JobDecision{Action::Stop, SIGTERM, 1, StopCause::Request});
  CHECK(controller.requestStop(SIGTERM, 3) == JobDecision{});  // once
  controller.onRankExit(1, killedBy(SIGTERM), 3);
  CHECK(controller.done());
}

TEST_CASE("SIGUSR1 and SIGUSR2 are forwarded each time and change nothing", "[common][controller]") {
  JobController controller = started(3, localOptions());
  CHECK(controller.onSignal(SIGUSR1, 1) == JobDecision{Action::Forward, SIGUSR1, 3});
  CHECK(controller.onSignal(SIGUSR2, 2) == JobDecision{Action::Forward, SIGUSR2, 3});
  CHECK(controller.state() == JobState::Running);
  CHECK_FALSE(controller.stopping());
}

TEST_CASE("the exit timeout runs from the first clean exit", "[common][controller]") {
  JobController controller = started(3, localOptions(5));
  CHECK(controller.onRankExit(0, 0, 1).exitTimeoutArmed);
  CHECK_FALSE(controller.onRankExit(1, 0, 2).exitTimeoutArmed);  // armed once
  REQUIRE(controller.nextDeadline());
  CHECK(*controller.nextDeadline() == Approx(6));
  CHECK(controller.onTime(5.9).empty());
  CHECK(controller.onTime(6) == std::vector<JobDecision>{{Action::Stop, SIGTERM, 1, StopCause::ExitTimeout}});
  controller.onRankExit(2, 0, 6.1);  // exits 0 on SIGTERM as asked: still cut short
  CHECK(controller.exitCode() == 1);

  SECTION("a grace of 0 kills in the same call") {
    JobControllerOptions options = localOptions(0);
    options.killGraceS = 0;
    JobController fast = started(2, options);
    fast.onRankExit(0, 0, 1);
    CHECK(fast.onTime(1) == std::vector<JobDecision>{{Action::Stop, SIGTERM, 1, StopCause::ExitTimeout},
                                                     {Action::Kill, SIGKILL, 1}});
  }
}

TEST_CASE("CommandJob's options: failure lines after the stop are not judged", "[common][controller]") {
  JobControllerOptions options;
  options.killGraceS = std::nullopt;
  options.exitTimeoutS = 2;
  options.recordFailuresWhileStopping = false;
  JobController controller = started(1, options);  // the one slot is the launcher command
  controller.onCleanExit(1);
  CHECK(controller.onTime(3).at(0).cause == StopCause::ExitTimeout);
  CHECK_FALSE(controller.nextDeadline());  // the grace is the driver's
  CHECK(controller.onFailure(failureAt(4'000'000, 143, "rank 1 was killed by signal 15", "n2"), 4) == JobDecision{});
  controller.onRankGone(0, 5);
  CHECK(controller.done());
  CHECK(controller.exitCode() == 1);  // the ranks the exit timeout stopped were cut short
  // A failure line trailing the launcher command's exit still counts.
  JobController late = started(1, options);
  late.onRankGone(0, 1);
  CHECK(late.onFailure(failureAt(2'000'000, 3, "rank 0 exited with code 3", "n1"), 2).action == Action::Stop);
  CHECK(late.exitCode() == 3);
}

TEST_CASE("a lost host ends its ranks and fails the job with code 1", "[common][controller]") {
  JobController controller = started(4, agentBackendOptions());
  const JobDecision stop = controller.onHostLost({2, 3}, failureAt(5, 1, "agent w1 closed; lost rank 2, rank 3", "w1"), 1);
  CHECK(stop == JobDecision{Action::Stop, SIGTERM, 2, StopCause::Failure});
  CHECK(controller.runningCount() == 2);
  REQUIRE(controller.failures().size() == 1);
  CHECK(controller.failures()[0].hostLost);
  // Nothing of it was running any more: no failure.
  CHECK(controller.onHostLost({2, 3}, failureAt(6, 1, "again", "w1"), 2) == JobDecision{});
  CHECK(controller.failures().size() == 1);
  CHECK(controller.exitCode() == 1);
}

TEST_CASE("a spawn failure stops the started ranks and is the cause", "[common][controller]") {
  JobController controller(3, localOptions());
  controller.rankStarted(0);
  CHECK(controller.onSpawnFailed(failureAt(1, 1, "spawn 'python3': No such file or directory", ""), 1) ==
        JobDecision{Action::Stop, SIGTERM, 1, StopCause::SpawnFailure});
  CHECK(controller.stopCause() == StopCause::SpawnFailure);
  CHECK_FALSE(controller.done());
  controller.onRankExit(0, killedBy(SIGTERM), 2);
  CHECK(controller.done());
  CHECK(controller.exitCode() == 1);
}

TEST_CASE("a job still starting is not done when its started ranks have exited", "[common][controller]") {
  JobController controller(2, localOptions(4));
  controller.rankStarted(0);
  CHECK(controller.onRankExit(0, 0, 1).exitTimeoutArmed);
  CHECK_FALSE(controller.done());
  CHECK_FALSE(controller.nextDeadline());  // nothing runs that the timeout could stop
  controller.rankStarted(1);
  REQUIRE(controller.nextDeadline());
  CHECK(*controller.nextDeadline() == Approx(5));
}

TEST_CASE("abort kills every running rank and a signal after the end forwards to none", "[common][controller]") {
  JobController controller = started(2, localOptions());
  controller.onRankExit(0, 0, 1);
  CHECK(controller.abort() == JobDecision{Action::Kill, SIGKILL, 1});
  CHECK(controller.stopping());

  JobController finished = started(1, localOptions());
  finished.onRankExit(0, 0, 1);
  CHECK(finished.onSignal(SIGTERM, 2) == JobDecision{Action::Stop, SIGTERM, 0, StopCause::Signal});
  CHECK(finished.exitCode() == 143);
  CHECK(finished.onSignal(SIGTERM, 3) == JobDecision{Action::Kill, SIGKILL, 0});
}

TEST_CASE("ranks stopped by the exit timeout fail the job on every backend's options", "[common][controller]") {
  SECTION("local: the SIGTERMed rank's own code") {
    JobController local = started(2, localOptions(1));
    local.onRankExit(0, 0, 1);
    local.onTime(2);
    local.onRankExit(1, killedBy(SIGTERM), 2.1);
    CHECK(local.exitCode() == 143);
  }
  SECTION("agent backend: the stop-caused code") {
    JobController agent = started(2, agentBackendOptions(1));
    agent.onRankExit(0, 0, 1);
    agent.onTime(2);
    agent.onRankExit(1, killedBy(SIGTERM), 2.1);
    CHECK(agent.exitCode() == 143);
  }
  SECTION("CommandJob: the remote ranks' codes are unknown, the job fails with 1") {
    JobControllerOptions options = localOptions(1);
    options.killGraceS = std::nullopt;
    options.recordFailuresWhileStopping = false;
    JobController command = started(1, options);
    command.onCleanExit(1);
    command.onTime(2);
    command.onRankGone(0, 2.5);
    CHECK(command.done());
    CHECK(command.exitCode() == 1);
  }
}

TEST_CASE("ranks alive killWaitS after SIGKILL (state D) are given up and the job ends with its code",
          "[common][controller]") {
  JobControllerOptions options = localOptions();
  options.killGraceS = 2;
  options.killWaitS = 10;
  JobController controller = started(3, options);
  controller.onRankExit(0, exitedWith(3), 1);
  controller.onRankExit(2, killedBy(SIGTERM), 1.5);
  CHECK(controller.onTime(3) == std::vector<JobDecision>{{Action::Kill, SIGKILL, 1}});
  REQUIRE(controller.nextDeadline());
  CHECK(*controller.nextDeadline() == Approx(13));
  CHECK(controller.onTime(12.9).empty());
  CHECK_FALSE(controller.done());
  CHECK(controller.onTime(13) == std::vector<JobDecision>{{Action::Abandon, 0, 1}});
  CHECK(controller.done());
  CHECK(controller.abandoned(1));
  CHECK_FALSE(controller.abandoned(0));
  CHECK_FALSE(controller.running(1));
  CHECK(controller.exitCode() == 3);
  CHECK_FALSE(controller.nextDeadline());

  SECTION("a second stop signal's SIGKILL starts the same wait") {
    JobController signalled = started(1, options);
    signalled.onSignal(SIGINT, 1);
    CHECK(signalled.onSignal(SIGINT, 2) == JobDecision{Action::Kill, SIGKILL, 1});
    CHECK(signalled.onTime(12) == std::vector<JobDecision>{{Action::Abandon, 0, 1}});
    CHECK(signalled.exitCode() == 130);
  }
  SECTION("without killWaitS the wait has no end (the agent backend's choice)") {
    JobControllerOptions forever = options;
    forever.killWaitS = std::nullopt;
    JobController patient = started(1, forever);
    patient.onRankExit(0, exitedWith(1), 1);  // nothing else runs: done at once
    JobController waiting = started(2, forever);
    waiting.onRankExit(0, exitedWith(1), 1);
    waiting.onTime(3);
    CHECK(waiting.onTime(1e6).empty());
    CHECK_FALSE(waiting.done());
  }
}
