// RemoteJob with per-rank reports (the agent medium, remote_job_ranks.cc) against fake channels: Ctrl-C,
// signals once, the second Ctrl-C, the exit timeout, the earliest failure as root cause, a lost node, a rank
// given up in state D, a start error, a hang, and heartbeats while stopping.

#include <catch2/catch.hpp>

#include <csignal>
#include <memory>

#include "launcher/remote_job/remote_job.h"
#include "tests/launcher/remote_job/captured_fd.h"
#include "tests/launcher/remote_job/fake_channel.h"

using Catch::Matchers::Contains;
using dsrun::launcher::RankExit;
using dsrun::launcher::RankOnHost;
using dsrun::launcher::RemoteJob;
using dsrun::launcher::RemoteJobSettings;
using dsrun::launcher::RoundOutcome;
using dsrun::Seconds;
using dsrun::launcher::test::CapturedFd;
using dsrun::launcher::test::FakeChannel;

namespace {

using Log = std::vector<std::string>;

/// Two nodes, dsn1 with ranks 0-1 and dsn2 with ranks 2-3, configured as the agent medium's loop does.
struct RankHarness {
  explicit RankHarness(RemoteJobSettings settings = {}) : out(outFd.fd()), err(errFd.fd()) {
    settings.nodeRanks = {{0, 1}, {2, 3}};
    std::vector<dsrun::launcher::NodeChannel*> raw;
    for (const char* host : {"dsn1", "dsn2"}) {
      channels.push_back(std::make_unique<FakeChannel>(host, log));
      channels.back()->killEnds = false;  // an agent reports its ranks' ends after a kill too
      raw.push_back(channels.back().get());
    }
    job = std::make_unique<RemoteJob>(Log{"dsn1", "dsn2"}, raw, std::move(settings), out, err);
  }
  /// Starts the job and its four ranks (pids 10 + rank).
  void startAll() {
    job->start(Seconds(0));
    for (int rank = 0; rank < 4; ++rank) job->onRankStarted(rank, 10 + rank);
    take();
  }
  void exit(int rank, int waitStatus, double at, int64_t whenUs = 0) {
    RankExit e;
    e.rank = rank;
    e.pid = 10 + rank;
    e.waitStatus = waitStatus;
    e.whenUs = whenUs != 0 ? whenUs : static_cast<int64_t>(at * 1e6);
    job->onRankExited(e, Seconds(at));
  }
  Log take() {
    Log taken;
    taken.swap(log);
    return taken;
  }

  Log log;
  CapturedFd outFd, errFd;
  dsrun::LineSink out, err;
  std::vector<std::unique_ptr<FakeChannel>> channels;
  std::unique_ptr<RemoteJob> job;
};

int exited(int code) { return (code & 0xff) << 8; }
int killedBy(int signal) { return signal & 0x7f; }

}  // namespace

TEST_CASE("RemoteJob per rank: a Ctrl-C goes to every node once, is worded, and decides 128+2",
          "[launcher][remote_job]") {
  RankHarness h;
  h.startAll();
  h.job->onSignal(SIGINT, Seconds(1));
  CHECK(h.take() == Log{"dsn1 signal 2", "dsn2 signal 2"});
  CHECK_THAT(h.errFd.text(), Contains("dsrun: received SIGINT; forwarded it to 4 ranks on 2 nodes"));
  for (int rank = 0; rank < 4; ++rank) h.exit(rank, killedBy(SIGINT), 2);
  CHECK(h.take().empty());  // ranks ending of the stop stop nothing more
  REQUIRE(h.job->done());
  CHECK(h.job->finish() == 130);
  CHECK_THAT(h.errFd.text(), !Contains("Root Cause"));
}

TEST_CASE("RemoteJob per rank: SIGUSR1 is forwarded each time to the nodes still reachable, never before the start",
          "[launcher][remote_job]") {
  RankHarness h;
  h.job->onSignal(SIGUSR1, Seconds(0));
  CHECK(h.take().empty());
  CHECK_THAT(h.errFd.text(), Contains("dsrun: received SIGUSR1 before any rank started; not forwarded"));
  h.startAll();
  h.exit(0, exited(0), 1);
  h.job->onSignal(SIGUSR1, Seconds(2));
  CHECK(h.take() == Log{"dsn1 signal 10", "dsn2 signal 10"});
  CHECK_THAT(h.errFd.text(), Contains("dsrun: received SIGUSR1; forwarded it to 3 ranks on 2 nodes"));
  CHECK_FALSE(h.job->controller().stopping());
  h.job->onLostAt(1, "agent dsn2:29600: connection reset", 3000000, Seconds(3));
  h.take();
  h.job->onSignal(SIGUSR1, Seconds(4));
  CHECK(h.take() == Log{"dsn1 signal 10"});  // the lost node is not signalled
  CHECK_THAT(h.errFd.text(), Contains("dsrun: received SIGUSR1; forwarded it to 1 rank on 1 node"));
}

TEST_CASE("RemoteJob per rank: while a failure stops the job a Ctrl-C still arrives, the second kills and ends it",
          "[launcher][remote_job]") {
  RankHarness h;
  h.startAll();
  h.exit(1, exited(3), 1);
  CHECK(h.take() == Log{"dsn1 stop", "dsn2 stop"});
  h.job->onSignal(SIGINT, Seconds(2));
  CHECK(h.take() == Log{"dsn1 signal 2", "dsn2 signal 2"});
  CHECK_FALSE(h.job->done());
  h.job->onSignal(SIGINT, Seconds(3));
  CHECK(h.take() == Log{"dsn1 kill", "dsn2 kill"});
  CHECK_THAT(h.errFd.text(), Contains("dsrun: received SIGINT while stopping; sent SIGKILL to every rank"));
  CHECK(h.job->abandoned());
  CHECK(h.job->done());  // without waiting for the ranks' ends: a silent host must not hold dsrun
}

TEST_CASE("RemoteJob per rank: the exit timeout stops the ranks still running, names them, and the job fails",
          "[launcher][remote_job]") {
  RemoteJobSettings settings;
  settings.stop = dsrun::StopTimes::fromOptions(30, 5);
  settings.heartbeat = Seconds(0);
  RankHarness h(settings);
  h.startAll();
  h.exit(0, exited(0), 101);
  h.exit(1, exited(0), 102);
  REQUIRE(h.job->nextDeadline());
  CHECK(h.job->nextDeadline()->count() == Approx(106));
  h.job->onTime(Seconds(105.9));
  CHECK(h.take().empty());
  h.job->onTime(Seconds(106));
  CHECK(h.take() == Log{"dsn1 stop", "dsn2 stop"});
  const std::string err = h.errFd.text();
  CHECK_THAT(err, Contains("rank 0 (dsn1 pid 10) finished cleanly"));
  CHECK_THAT(err, Contains("rank 2 (dsn2 pid 12), rank 3 (dsn2 pid 13)"));
  CHECK_THAT(err, !Contains("rank 1 (dsn1 pid 11), rank 2"));
  h.exit(2, exited(0), 107);  // they end cleanly on the stop: the job still fails, they were cut short
  h.exit(3, exited(0), 107);
  CHECK(h.job->finish() == 1);
}

TEST_CASE("RemoteJob per rank: the earliest failure in time is the root cause, however late it is reported",
          "[launcher][remote_job]") {
  RemoteJobSettings settings;
  settings.program = "train.py";
  RankHarness h(settings);
  h.startAll();
  h.job->onRankStderr(2, "ValueError: bad batch");
  h.exit(0, exited(1), 2, 3000000);  // reported first, happened later
  CHECK(h.take() == Log{"dsn1 stop", "dsn2 stop"});
  h.exit(2, exited(7), 2.5, 2000000);  // happened first
  h.exit(1, killedBy(SIGTERM), 3);
  h.exit(3, killedBy(SIGTERM), 3);
  CHECK(h.take().empty());
  CHECK(h.job->finish() == 7);
  const std::string err = h.errFd.text();
  CHECK_THAT(err, Contains("rank 2 (dsn2 pid 12) exited with code 7"));
  CHECK_THAT(err, Contains("ValueError: bad batch"));
  CHECK_THAT(err, Contains("train.py"));
}

TEST_CASE("RemoteJob per rank: a lost node loses its running ranks, stops the others and fails the job",
          "[launcher][remote_job]") {
  const bool elastic = GENERATE(false, true);
  RemoteJobSettings settings;
  settings.elasticRound = elastic;
  RankHarness h(settings);
  h.startAll();
  h.exit(2, exited(0), 1);
  h.job->onLostAt(1, "agent dsn2:29600: host dsn2 silent for 2500 ms", 1500000, Seconds(4));
  CHECK(h.take() == Log{"dsn1 stop"});
  h.exit(0, killedBy(SIGTERM), 5);
  h.exit(1, killedBy(SIGTERM), 5);
  REQUIRE(h.job->done());
  CHECK(h.job->finish() == 1);
  if (elastic) {
    const RoundOutcome& o = h.job->outcome();
    CHECK(o.end == RoundOutcome::End::Failed);
    CHECK(o.cause == "agent dsn2:29600: host dsn2 silent for 2500 ms; lost rank 3 (dsn2 pid 13)");
    CHECK(o.lostHosts == Log{"dsn2"});
    CHECK(o.failedHosts == Log{"dsn2"});
  } else {
    CHECK_THAT(h.errFd.text(), Contains("host dsn2 silent for 2500 ms; lost rank 3 (dsn2 pid 13)"));
  }
}

TEST_CASE("RemoteJob per rank: a rank its agent gave up in state D is named and ends the job",
          "[launcher][remote_job]") {
  RankHarness h;
  h.startAll();
  h.job->onSignal(SIGTERM, Seconds(1));
  for (int rank : {0, 1, 2}) h.exit(rank, killedBy(SIGTERM), 2);
  CHECK_FALSE(h.job->done());
  RankExit stuck;
  stuck.rank = 3;
  stuck.pid = 13;
  stuck.waitStatus = killedBy(SIGKILL);
  stuck.givenUpState = "D";
  h.job->onRankExited(stuck, Seconds(45));
  CHECK(h.job->done());
  CHECK_THAT(h.errFd.text(),
             Contains("dsrun: rank 3 (dsn2 pid 13) is still alive 10s after SIGKILL, in state D; dsn2's agent gave up on it"));
  CHECK(h.job->finish() == 143);
}

TEST_CASE("RemoteJob per rank: a start error stops the job and is the error it ends with",
          "[launcher][remote_job]") {
  RankHarness h;
  h.startAll();
  h.job->onSpawnFailed(1, "agent dsn2:29600: spawn 'train.py': No such file or directory", 1000000, Seconds(1));
  CHECK(h.take() == Log{"dsn1 stop", "dsn2 stop"});
  for (int rank = 0; rank < 4; ++rank) h.exit(rank, killedBy(SIGTERM), 2);
  h.job->finish();
  REQUIRE(h.job->spawnFailure());
  CHECK(*h.job->spawnFailure() == "agent dsn2:29600: spawn 'train.py': No such file or directory");
}

TEST_CASE("RemoteJob per rank: a rank whose step stops moving is a hang, reported once its stacks are in",
          "[launcher][remote_job]") {
  RemoteJobSettings settings;
  settings.heartbeat = Seconds(1);
  settings.hangTimeout = Seconds(10);
  int calls = 0;
  std::vector<RankOnHost> seen;
  std::string named;
  settings.onHang = [&](const std::string& what, const std::string& host, std::vector<RankOnHost> running) {
    ++calls;
    named = what + "@" + host;
    seen = std::move(running);
  };
  RankHarness h(settings);
  h.startAll();
  for (int rank = 0; rank < 4; ++rank) h.job->onRankProgress(rank, 5, Seconds(1));
  for (int rank : {0, 1, 3}) h.job->onRankProgress(rank, 6, Seconds(8));
  h.job->onTime(Seconds(10));
  CHECK(calls == 0);
  h.job->onTime(Seconds(11));  // rank 2 has not moved since 1 s
  REQUIRE(calls == 1);
  CHECK(named == "no progress for 10 s (--hang_timeout_s) by rank 2 (dsn2 step 5); stacks of every rank: @dsn2");
  CHECK(seen.size() == 4);
  CHECK(seen[2].pid == 12);
  h.job->onTime(Seconds(12));
  CHECK(calls == 1);  // one collection at a time
  CHECK_FALSE(h.job->controller().stopping());
  h.job->onFailure(dsrun::TimedFailure{11000000, 1, named, "dsn2"}, Seconds(14));
  CHECK(h.job->controller().stopping());
}

TEST_CASE("RemoteJob per rank: heartbeats go on while the job stops", "[launcher][remote_job]") {
  RemoteJobSettings settings;
  settings.heartbeat = Seconds(1);
  RankHarness h(settings);
  h.startAll();
  h.job->onTime(Seconds(1));
  CHECK(h.take() == Log{"dsn1 beat", "dsn2 beat"});
  h.job->onSignal(SIGTERM, Seconds(1.5));
  h.take();
  REQUIRE(h.job->nextDeadline());
  CHECK(h.job->nextDeadline()->count() == Approx(2));
  h.job->onTime(Seconds(2));
  CHECK(h.take() == Log{"dsn1 beat", "dsn2 beat"});
}

TEST_CASE("RemoteJob per rank: ends still unreported at the stop's deadline are given up, their host named, and the "
          "job fails instead of waiting forever", "[launcher][remote_job]") {
  RemoteJobSettings settings;
  settings.heartbeat = Seconds(0);  // no beat to arm a timer: the deadline alone must
  settings.stop.killGrace = Seconds(2);
  settings.nodeKillWait = Seconds(15);
  settings.reportSlack = Seconds(5);
  RankHarness h(settings);
  h.startAll();
  CHECK_FALSE(h.job->nextDeadline());  // nothing to wait for while the job runs
  h.job->onSignal(SIGTERM, Seconds(1));
  h.exit(0, killedBy(SIGTERM), 2);
  h.exit(1, killedBy(SIGTERM), 2);
  h.take();
  // dsn2 stays connected and says nothing: the stop began at 1 s, so 1 + 2 + 15 + 5.
  REQUIRE(h.job->nextDeadline());
  CHECK(h.job->nextDeadline()->count() == Approx(23));
  h.job->onTime(Seconds(22.5));
  CHECK_FALSE(h.job->done());
  CHECK(h.take().empty());
  h.job->onTime(Seconds(23));
  REQUIRE(h.job->done());
  CHECK(h.take() == Log{"dsn1 kill", "dsn2 kill"});
  CHECK_THAT(h.errFd.text(), Contains("dsrun: 2 ranks on 1 host no end reported within 22 s of the stop (the kill grace "
                                      "2 s, then 20 s for the agents to report): dsn2 (ranks 2, 3); sent SIGKILL"));
  CHECK(h.job->finish() == 1);
  CHECK_FALSE(h.job->nextDeadline());
}

TEST_CASE("RemoteJob per rank: a failure's stop gives up the unreported ranks too, and the failure stays the root "
          "cause", "[launcher][remote_job]") {
  const bool elastic = GENERATE(false, true);
  RemoteJobSettings settings;
  settings.elasticRound = elastic;
  settings.stop.killGrace = Seconds(1);
  settings.nodeKillWait = Seconds(0);
  settings.reportSlack = Seconds(4);
  RankHarness h(settings);
  h.startAll();
  h.exit(0, exited(7), 10);
  h.exit(1, killedBy(SIGTERM), 11);
  h.take();
  h.job->onTime(Seconds(15));  // 10 + 1 + 0 + 4
  REQUIRE(h.job->done());
  CHECK(h.job->finish() == 7);
  if (elastic) {
    const RoundOutcome& o = h.job->outcome();
    CHECK_THAT(o.cause, Contains("rank 0 (dsn1 pid 10) exited with code 7"));
    CHECK(o.lostHosts == Log{"dsn2"});
  } else {
    CHECK_THAT(h.errFd.text(), Contains("dsn2 (ranks 2, 3)"));
    CHECK_THAT(h.errFd.text(), Contains("Root Cause"));
  }
}
