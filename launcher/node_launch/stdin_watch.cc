#include "launcher/node_launch/stdin_watch.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <thread>

#include "common/error.h"

namespace dsrun {

void watchStdinForEof() {
  const int watched = ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
  if (watched < 0) throw IoError("", "fcntl", errno, "duplicating stdin to watch it");
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null < 0 || ::dup2(null, STDIN_FILENO) < 0) throw IoError("/dev/null", "open", errno, "replacing stdin");
  ::close(null);
  std::thread([watched] {
    // Block the signals runLocalJob handles, so they are delivered to the main thread, not this one.
    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
    char buffer[256];
    while (true) {
      const ssize_t n = ::read(watched, buffer, sizeof buffer);
      if (n > 0 || (n < 0 && errno == EINTR)) continue;
      break;
    }
    ::kill(::getpid(), SIGTERM);
  }).detach();
}

}  // namespace dsrun
