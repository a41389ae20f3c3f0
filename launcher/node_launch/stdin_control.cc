#include "launcher/node_launch/stdin_control.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>
#include <string>
#include <thread>

#include "common/error.h"
#include "common/line_buffer.h"
#include "supervision/launch_lines.h"

namespace dsrun::launcher {

UniqueFd takeStdinForControl() {
  UniqueFd control(::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3));
  if (!control.valid()) throw IoError("", "fcntl", errno, "duplicating stdin to read control lines from it");
  UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null.valid() || ::dup2(null.get(), STDIN_FILENO) < 0) {
    throw IoError("/dev/null", "open", errno, "replacing stdin");
  }
  return control;
}

namespace {

bool writeAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void relay(UniqueFd from, UniqueFd to, int timeoutMs) {
  LineBuffer lines(1024);
  const auto forward = [&](std::string_view line) {
    if (!isHeartbeatLine(line)) writeAll(to.get(), std::string(line) + "\n");
  };
  char buffer[512];
  while (true) {
    pollfd p{from.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, timeoutMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      char host[256] = {};
      ::gethostname(host, sizeof host - 1);
      std::cerr << "dsrun-launch: " << host << ": nothing from dsrun for " << timeoutMs
                << " ms (its heartbeats stopped: dsrun or the link to it is gone); stopping the ranks" << std::endl;
      return;  // closing `to`: end of file for runLocalJob
    }
    const ssize_t n = ::read(from.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      lines.finish(forward);
      return;
    }
    lines.feed(std::string_view(buffer, static_cast<size_t>(n)), forward);
  }
}

}  // namespace

UniqueFd relayWithTimeout(UniqueFd control, int timeoutMs) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw IoError("", "pipe2", errno, "relaying the control channel");
  UniqueFd readEnd(fds[0]), writeEnd(fds[1]);
  // Detached: it ends with the channel, its timeout, or the process.
  std::thread(relay, std::move(control), std::move(writeEnd), timeoutMs).detach();
  return readEnd;
}

}  // namespace dsrun::launcher
