#include "supervision/output_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <catch2/catch.hpp>
#include <string>

using dsrun::OutputWriter;
using namespace std::chrono_literals;

namespace {

/// Reads everything `fd` holds now (non-blocking).
std::string drain(int fd) {
  std::string out;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

}  // namespace

TEST_CASE("OutputWriter: a reader that does not read blocks only the writer thread; credit follows the writes",
          "[common][output]") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  std::atomic<size_t> credited{0};
  std::string expected;
  {
    OutputWriter writer(fds[1], fds[1], [&](uint64_t tag, size_t bytes) {
      CHECK(tag == 7);
      credited += bytes;
    });
    // 4 MiB into a 64 KiB pipe nobody reads: every write() call returns at once.
    for (int i = 0; i < 4096; ++i) {
      std::string line = std::to_string(i) + ":" + std::string(1017, 'x') + "\n";
      expected += line;
      writer.write(i % 2 ? OutputWriter::Stream::Err : OutputWriter::Stream::Out, line, 7, line.size());
    }
    CHECK_FALSE(writer.waitIdle(50ms));
    CHECK(credited.load() < expected.size());
    std::string got;
    while (!writer.waitIdle(1ms) || got.size() < expected.size()) got += drain(fds[0]);
    CHECK(got == expected);  // both streams share the fd here: order is kept across them
    CHECK(credited.load() == expected.size());
  }
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("OutputWriter: abandon() drops what is queued and lets the destructor return at once", "[common][output]") {
  std::signal(SIGPIPE, SIG_IGN);  // as dsrun does while a job runs
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  std::atomic<int> calls{0};
  {
    OutputWriter writer(fds[1], fds[1], [&](uint64_t, size_t) { ++calls; });
    for (int i = 0; i < 200; ++i) writer.write(OutputWriter::Stream::Out, std::string(65536, 'y') + "\n", 1, 1);
    CHECK_FALSE(writer.waitIdle(20ms));  // the pipe is full, nobody reads: the thread is blocked
    writer.abandon();
    CHECK(writer.queuedBytes() <= 65537);  // only the batch being written is left
  }  // returns although the thread is still blocked in write(); the thread is detached
  const int before = calls.load();
  CHECK(before <= 1);
  // The blocked write now fails with EPIPE and the detached thread ends; fds[1] stays open for it.
  ::close(fds[0]);
}
