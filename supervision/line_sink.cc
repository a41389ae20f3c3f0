#include "supervision/line_sink.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace dsrun {

void LineSink::write(std::string_view prefix, std::string_view line) {
  if (broken_) return;
  scratch_.assign(prefix);
  scratch_.append(line);
  scratch_.push_back('\n');
  writeBytes(scratch_);
}

void LineSink::writeBytes(std::string_view bytes) {
  if (broken_) return;
  std::string_view rest = bytes;
  while (!rest.empty()) {
    ssize_t n = ::write(fd_, rest.data(), rest.size());
    if (n >= 0) {
      rest.remove_prefix(static_cast<size_t>(n));
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      // Someone set O_NONBLOCK on a descriptor we share (a terminal, a pipe); wait instead of spinning.
      pollfd pfd{fd_, POLLOUT, 0};
      ::poll(&pfd, 1, -1);
    } else if (errno != EINTR) {
      broken_ = true;  // EPIPE, EBADF, ENOSPC...: the destination is gone; the job itself goes on
      return;
    }
  }
}

}  // namespace dsrun
