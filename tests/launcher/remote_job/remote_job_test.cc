// RemoteJob against fake channels: the stop policy every remote medium shares, and where the media differ
// (what a second Ctrl-C does, when a stopped node is killed, what a lost node means), per medium.

#include "launcher/remote_job/remote_job.h"

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <memory>

#include "launcher/remote_job/round_facts.h"
#include "tests/launcher/remote_job/captured_fd.h"
#include "tests/launcher/remote_job/fake_channel.h"

using Catch::Matchers::Contains;
using dsrun::launcher::RemoteJob;
using dsrun::launcher::RemoteJobSettings;
using dsrun::launcher::RoundOutcome;
using dsrun::Seconds;
using dsrun::launcher::test::CapturedFd;
using dsrun::launcher::test::FakeChannel;

namespace {

/// The two media the driver runs today, as their loops configure it.
enum class Medium { Ssh, Command };

/// A job of `hosts.size()` nodes on fake channels; time is whatever the test passes.
struct Harness {
  Harness(Medium medium, std::vector<std::string> hosts, RemoteJobSettings settings = {}) : out(outFd.fd()), err(errFd.fd()) {
    if (medium == Medium::Command) {
      settings.nodeKillWait = std::nullopt;  // CommandJob escalates on its own clock
      settings.whileStopping = dsrun::SignalWhileStopping::Kill;
      settings.heartbeat = Seconds(0);
    }
    std::vector<dsrun::launcher::NodeChannel*> raw;
    for (const std::string& host : hosts) {
      channels.push_back(std::make_unique<FakeChannel>(host, log));
      channels.back()->killEnds = medium == Medium::Ssh;
      raw.push_back(channels.back().get());
    }
    job = std::make_unique<RemoteJob>(hosts, raw, std::move(settings), out, err);
  }
  /// The log since the last call.
  std::vector<std::string> take() {
    std::vector<std::string> taken;
    taken.swap(log);
    return taken;
  }

  std::vector<std::string> log;
  CapturedFd outFd, errFd;
  dsrun::LineSink out, err;
  std::vector<std::unique_ptr<FakeChannel>> channels;
  std::unique_ptr<RemoteJob> job;
};

using Log = std::vector<std::string>;

}  // namespace

TEST_CASE("RemoteJob: a Ctrl-C goes to every node as SIGINT, once, and decides 128+2", "[launcher][remote_job]") {
  const Medium medium = GENERATE(Medium::Ssh, Medium::Command);
  Harness h(medium, {"dsn1", "dsn2"});
  h.job->start(Seconds(0));
  h.take();
  h.job->onSignal(SIGINT, Seconds(1));
  CHECK(h.take() == Log{"dsn1 signal 2", "dsn2 signal 2"});
  CHECK(h.job->controller().stopping());
  h.job->onExited(0, 130, "dsn1 ended", Seconds(2));
  h.job->onExited(1, 130, "dsn2 ended", Seconds(2));
  CHECK(h.take().empty());  // a node ending of the stop stops nothing more
  REQUIRE(h.job->done());
  CHECK(h.job->finish() == 130);
}

TEST_CASE("RemoteJob: SIGUSR1 is forwarded to every node each time and the job goes on",
          "[launcher][remote_job]") {
  const Medium medium = GENERATE(Medium::Ssh, Medium::Command);
  Harness h(medium, {"dsn1", "dsn2"});
  h.job->start(Seconds(0));
  h.take();
  h.job->onSignal(SIGUSR1, Seconds(1));
  h.job->onSignal(SIGUSR1, Seconds(2));
  CHECK(h.take() == Log{"dsn1 signal 10", "dsn2 signal 10", "dsn1 signal 10", "dsn2 signal 10"});
  CHECK_FALSE(h.job->controller().stopping());
  h.job->onExited(0, 0, "", Seconds(3));
  h.job->onExited(1, 0, "", Seconds(3));
  CHECK(h.job->finish() == 0);
}

TEST_CASE("RemoteJob: a second Ctrl-C is passed on over ssh (dsrun-launch kills) and kills on the command medium",
          "[launcher][remote_job]") {
  const Medium medium = GENERATE(Medium::Ssh, Medium::Command);
  Harness h(medium, {"dsn1"});
  h.job->start(Seconds(0));
  h.take();
  h.job->onSignal(SIGINT, Seconds(1));
  h.job->onSignal(SIGINT, Seconds(2));
  if (medium == Medium::Ssh) {
    CHECK(h.take() == Log{"dsn1 signal 2", "dsn1 signal 2"});
  } else {
    CHECK(h.take() == Log{"dsn1 signal 2", "dsn1 kill"});
  }
  h.job->onExited(0, 137, "dsn1 ended", Seconds(3));
  CHECK(h.job->finish() == 130);  // the first signal decides, however the ranks died
}

TEST_CASE("RemoteJob: the first failure line stops every node once and is the root cause",
          "[launcher][remote_job]") {
  const Medium medium = GENERATE(Medium::Ssh, Medium::Command);
  RemoteJobSettings settings;
  settings.program = "train.py";
  Harness h(medium, {"dsn1", "dsn2"}, settings);
  h.job->start(Seconds(0));
  h.take();
  h.job->onOutput(1, true, "dsn2: dsrun: rank 3 (dsn2 pid 70) exited with code 7", Seconds(1));
  CHECK(h.take() == Log{"dsn1 stop", "dsn2 stop"});
  // Ranks dying of the stop print failure lines too: consequences, not new failures.
  h.job->onOutput(0, true, "dsn1: dsrun: rank 0 (dsn1 pid 60) was killed by signal 15 (SIGTERM)", Seconds(2));
  h.job->onOutput(1, true, "dsn2: dsrun: rank 3 (dsn2) stderr| ValueError: bad batch", Seconds(2));
  CHECK(h.take().empty());
  h.job->onExited(0, 143, "dsn1 ended", Seconds(3));
  h.job->onExited(1, 7, "dsn2 ended", Seconds(3));
  CHECK(h.job->finish() == 7);
  const std::string err = h.errFd.text();
  CHECK_THAT(err, Contains("dsrun: rank 3 on dsn2 (pid 70) exited with code 7; stopped the job on every host"));
  CHECK_THAT(err, Contains("ValueError: bad batch"));
  CHECK_THAT(err, !Contains("dsn2: dsrun: rank 3 (dsn2) stderr|"));  // quoted in the block, not forwarded
}

TEST_CASE("RemoteJob: the exit timeout stops the nodes still running, names them, and the job fails",
          "[launcher][remote_job]") {
  const Medium medium = GENERATE(Medium::Ssh, Medium::Command);
  RemoteJobSettings settings;
  settings.stop = dsrun::StopTimes::fromOptions(30, 5);
  settings.rankHosts = {{0, "dsn1"}, {1, "dsn2"}};
  settings.heartbeat = Seconds(0);
  Harness h(medium, {"dsn1", "dsn2"}, settings);
  h.job->start(Seconds(100));
  h.take();
  h.job->onOutput(0, true, "dsn1: dsrun: rank 0 (dsn1 pid 5) finished cleanly", Seconds(101));
  h.job->onTime(Seconds(105.9));
  CHECK(h.take().empty());
  REQUIRE(h.job->nextDeadline());
  CHECK(h.job->nextDeadline()->count() == Approx(106));
  h.job->onTime(Seconds(106));
  CHECK(h.take() == Log{"dsn1 stop", "dsn2 stop"});
  h.job->onExited(0, 0, "", Seconds(107));
  h.job->onExited(1, 0, "", Seconds(107));
  CHECK(h.job->finish() == 1);
  CHECK_THAT(h.errFd.text(), Contains("rank 1 on dsn2 still running"));
  CHECK_THAT(h.errFd.text(), Contains("after rank 0 on dsn1 finished cleanly"));
}

TEST_CASE("RemoteJob: over ssh a stopped node is killed grace + its kill wait after the stop; the command "
          "medium escalates itself", "[launcher][remote_job]") {
  const Medium medium = GENERATE(Medium::Ssh, Medium::Command);
  RemoteJobSettings settings;
  settings.stop = dsrun::StopTimes::fromOptions(2, -1);
  settings.heartbeat = Seconds(0);
  Harness h(medium, {"dsn1", "dsn2"}, settings);
  h.job->start(Seconds(0));
  h.job->onSignal(SIGTERM, Seconds(10));
  h.job->onExited(0, 143, "dsn1 ended", Seconds(11));
  h.take();
  h.job->onTime(Seconds(26.9));
  CHECK(h.take().empty());
  h.job->onTime(Seconds(27));  // 10 + 2 s grace + 15 s kill wait
  if (medium == Medium::Ssh) {
    CHECK(h.take() == Log{"dsn2 kill"});
    CHECK(h.job->done());
    CHECK(h.job->finish() == 143);
  } else {
    CHECK(h.take().empty());
    CHECK_FALSE(h.job->nextDeadline());
    CHECK_FALSE(h.job->done());  // until the launcher command ends
  }
}

TEST_CASE("RemoteJob: a node lost while the job runs stops the others and fails the job with 255",
          "[launcher][remote_job]") {
  const bool elastic = GENERATE(false, true);
  RemoteJobSettings settings;
  settings.elasticRound = elastic;
  settings.heartbeat = Seconds(0);
  Harness h(Medium::Ssh, {"dsn1", "dsn2", "dsn3"}, settings);
  h.job->start(Seconds(0));
  h.take();
  h.job->onLost(1, "ssh dsn2:22: host dsn2 silent", Seconds(1));
  CHECK(h.take() == Log{"dsn1 stop", "dsn3 stop"});
  h.job->onExited(0, 0, "", Seconds(2));
  h.job->onLost(2, "ssh dsn3:22: connection to dsn3 lost", Seconds(2));  // lost while stopping: named, no new stop
  CHECK(h.take().empty());
  CHECK(h.job->finish() == 255);
  if (elastic) {
    const RoundOutcome& o = h.job->outcome();
    CHECK(o.end == RoundOutcome::End::Failed);
    CHECK(o.cause == "ssh dsn2:22: host dsn2 silent");
    CHECK(o.lostHosts == std::vector<std::string>{"dsn2", "dsn3"});
    CHECK(o.failedHosts == std::vector<std::string>{"dsn2"});
  } else {
    CHECK_THAT(h.errFd.text(), Contains("dsrun: ssh dsn2:22: host dsn2 silent"));
  }
}

TEST_CASE("RemoteJob: the command medium's launcher command ending non-zero on its own is the job's code",
          "[launcher][remote_job]") {
  Harness h(Medium::Command, {"pdsh"});
  h.job->start(Seconds(0));
  h.take();
  h.job->onExited(0, 3, "'pdsh' exited with code 3", Seconds(1));
  CHECK(h.job->done());
  CHECK(h.job->finish() == 3);
  CHECK_THAT(h.errFd.text(), Contains("dsrun: 'pdsh' exited with code 3"));
}

TEST_CASE("RemoteJob: a node that cannot start is lost after every other node was started",
          "[launcher][remote_job]") {
  RemoteJobSettings settings;
  settings.elasticRound = true;
  settings.heartbeat = Seconds(0);
  Harness h(Medium::Ssh, {"dsn1", "dsn2"}, settings);
  h.channels[0]->startError = "ssh dsn1:22: exec: channel refused";
  h.job->start(Seconds(0));
  CHECK(h.take() == Log{"dsn1 start", "dsn2 start", "dsn2 stop"});
  h.job->onExited(1, 143, "", Seconds(1));
  CHECK(h.job->finish() == 255);
  CHECK(h.job->outcome().lostHosts == std::vector<std::string>{"dsn1"});
}

TEST_CASE("RemoteJob: heartbeats go to every running node each period until the job stops",
          "[launcher][remote_job]") {
  RemoteJobSettings settings;
  settings.heartbeat = Seconds(0.5);
  Harness h(Medium::Ssh, {"dsn1", "dsn2"}, settings);
  h.job->start(Seconds(0));
  h.take();
  h.job->onTime(Seconds(0.4));
  CHECK(h.take().empty());
  h.job->onTime(Seconds(0.5));
  CHECK(h.take() == Log{"dsn1 beat", "dsn2 beat"});
  h.job->onExited(0, 0, "", Seconds(0.6));
  h.job->onTime(Seconds(1.0));
  CHECK(h.take() == Log{"dsn2 beat"});
  h.job->onSignal(SIGTERM, Seconds(1.1));
  h.take();
  h.job->onTime(Seconds(1.5));
  CHECK(h.take().empty());
}

TEST_CASE("RemoteJob: an elastic round stops for a rescale at a heartbeat and reports it",
          "[launcher][remote_job]") {
  RemoteJobSettings settings;
  settings.elasticRound = true;
  settings.heartbeat = Seconds(1);
  bool wanted = false;
  settings.hooks.rescaleWanted = [&wanted] { return wanted; };
  int started = 0;
  settings.hooks.onAllRanksStarted = [&started] {
    ++started;
    return std::string("dsrun: restart 1: every rank running");
  };
  Harness h(Medium::Ssh, {"dsn1", "dsn2"}, settings);
  h.job->start(Seconds(0));
  h.job->onStarted(0);
  CHECK(started == 0);
  h.job->onStarted(1);
  CHECK(started == 1);
  h.take();
  h.job->onTime(Seconds(1));
  CHECK(h.take() == Log{"dsn1 beat", "dsn2 beat"});
  wanted = true;
  h.job->onTime(Seconds(2));
  CHECK(h.take() == Log{"dsn1 beat", "dsn2 beat", "dsn1 stop", "dsn2 stop"});
  h.job->onExited(0, 143, "", Seconds(3));
  h.job->onExited(1, 143, "", Seconds(3));
  CHECK(h.job->finish() == 0);
  CHECK(h.job->outcome().end == RoundOutcome::End::Rescaled);
  CHECK_THAT(h.errFd.text(), Contains("dsrun: restart 1: every rank running"));
}
