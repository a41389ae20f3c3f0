#include "agent/reaper.h"

#include <sys/wait.h>

#include <csignal>

namespace dsrun::agent {

Reaper::Reaper(boost::asio::io_context& io, OnReaped onReaped) : sigchld_(io, SIGCHLD), onReaped_(std::move(onReaped)) {
  arm();
}

void Reaper::close() {
  boost::system::error_code ignored;
  sigchld_.cancel(ignored);
}

void Reaper::arm() {
  sigchld_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    reapAll();
    arm();
  });
}

void Reaper::reapAll() {
  // Signals coalesce: one SIGCHLD may stand for several children, so reap until none is ready.
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;  // 0: none ready; -1/ECHILD: no children left
    onReaped_(pid, status);
  }
}

}  // namespace dsrun::agent
