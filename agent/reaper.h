#pragma once
// Reaper: collects every exited child of the agent on the loop thread, with signal_set(SIGCHLD) plus a
// waitpid(-1, WNOHANG) loop (docs/style.md §11), and reports each one's pid and wait status. It reaps
// every child of the process, not only the ranks: the callback ignores pids it does not know.
// Loop-thread only.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <functional>

namespace dsrun::agent {

class Reaper {
 public:
  using OnReaped = std::function<void(pid_t pid, int waitStatus)>;

  /// Starts listening for SIGCHLD at once, so children spawned from now on are not missed.
  Reaper(boost::asio::io_context& io, OnReaped onReaped);

  /// Stops listening so the io_context can run out of work; children exiting later stay unreaped.
  void close();

 private:
  void arm();
  void reapAll();

  boost::asio::signal_set sigchld_;  ///< SIGCHLD notifications
  OnReaped onReaped_;                ///< told of each reaped child
};

}  // namespace dsrun::agent
