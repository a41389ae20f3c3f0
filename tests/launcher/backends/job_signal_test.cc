#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>

#include "common/strings.h"
#include "launcher/node_launch/job_registry.h"
#include "launcher/node_launch/job_signal.h"

namespace {

/// A job id of its own per test case, and its /tmp directory removed afterwards.
struct TestJob {
  std::string id = dsrun::strCat("job-signal-test-", ::getpid(), "-", counter()++);
  ~TestJob() {
    std::error_code ignored;
    std::filesystem::remove_all(dsrun::launcher::jobDir(id), ignored);
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

std::string readAvailable(int fd) {
  std::string out;
  char buffer[256];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<size_t>(n));
  return out;
}

}  // namespace

TEST_CASE("signalJob writes one control line per signal, in order, to each launcher of the job",
          "[launcher][node_launch]") {
  TestJob job;
  dsrun::launcher::JobRegistration first(job.id);
  // A second launcher of the job on this host (one registration per process: made by hand).
  const std::string fifo = dsrun::strCat(dsrun::launcher::jobDir(job.id), "/control-", dsrun::launcher::thisHostName(), "-", ::getpid() + 1);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const int second = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
  REQUIRE(second >= 0);
  const dsrun::launcher::JobSignalResult result = dsrun::launcher::signalJob(job.id, {SIGUSR1, SIGUSR2, SIGUSR1});
  CHECK(result.launchers == 2);
  CHECK_FALSE(result.marked);
  CHECK(readAvailable(first.controlFd()) == "signal USR1\nsignal USR2\nsignal USR1\n");
  CHECK(readAvailable(second) == "signal USR1\nsignal USR2\nsignal USR1\n");
  CHECK_FALSE(first.killed());
  ::close(second);
}

TEST_CASE("signalJob marks the job killed for a stop signal, so a later launch refuses to start",
          "[launcher][node_launch]") {
  TestJob job;
  // before any launcher registered
  const dsrun::launcher::JobSignalResult early = dsrun::launcher::signalJob(job.id, {SIGINT});
  CHECK(early.launchers == 0);
  CHECK(early.marked);
  dsrun::launcher::JobRegistration late(job.id);
  CHECK(late.killed());
}

TEST_CASE("signalJob skips a launcher that is gone and one of another host", "[launcher][node_launch]") {
  TestJob job;
  dsrun::launcher::JobRegistration live(job.id);
  const std::string dir = dsrun::launcher::jobDir(job.id);
  // A FIFO nobody reads (its launcher was SIGKILLed) and a live one of another host sharing /tmp.
  REQUIRE(::mkfifo((dir + "/control-" + dsrun::launcher::thisHostName() + "-999999").c_str(), 0600) == 0);
  const std::string other = dir + "/control-another-host-" + std::to_string(::getpid());
  REQUIRE(::mkfifo(other.c_str(), 0600) == 0);
  const int otherReader = ::open(other.c_str(), O_RDWR | O_NONBLOCK);
  REQUIRE(otherReader >= 0);
  CHECK(dsrun::launcher::signalJob(job.id, {SIGUSR2}).launchers == 1);
  CHECK(readAvailable(live.controlFd()) == "signal USR2\n");
  CHECK(readAvailable(otherReader).empty());
  ::close(otherReader);
}

TEST_CASE("signalJob queues USR1/USR2 for a launcher that has not registered yet, which gets them in order",
          "[launcher][node_launch]") {
  TestJob job;
  const dsrun::launcher::JobSignalResult first = dsrun::launcher::signalJob(job.id, {SIGUSR1, SIGUSR1});
  CHECK(first.launchers == 0);
  CHECK(first.queued);
  CHECK_FALSE(first.marked);
  CHECK(dsrun::launcher::signalJob(job.id, {SIGUSR2}).queued);
  dsrun::launcher::JobRegistration late(job.id);
  CHECK_FALSE(late.killed());
  CHECK(readAvailable(late.controlFd()) == "signal USR1\nsignal USR1\nsignal USR2\n");
  // Delivered once: a later signal goes to the FIFO, nothing stays queued.
  const dsrun::launcher::JobSignalResult after = dsrun::launcher::signalJob(job.id, {SIGUSR2});
  CHECK(after.launchers == 1);
  CHECK_FALSE(after.queued);
  CHECK(readAvailable(late.controlFd()) == "signal USR2\n");
  CHECK_FALSE(std::filesystem::exists(dsrun::launcher::jobDir(job.id) + "/pending-" + dsrun::launcher::thisHostName()));
}
