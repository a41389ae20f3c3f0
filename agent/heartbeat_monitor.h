#pragma once
// HeartbeatMonitor: declares a peer lost after `failureThreshold` consecutive periods without a
// beat() (Ray's GcsHealthCheckManager shape: period and threshold injected, so tests pass 10 ms and
// step the io_context). Loop-thread only. Callbacks run on the loop and never after stop().

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>

namespace dsrun::agent {

class HeartbeatMonitor {
 public:
  /// `onMissed(misses)` runs after each period without a beat; `onPeerLost()` once, when misses
  /// reach `failureThreshold` (the monitor then stops). `onRecovered()` runs on a beat after misses.
  HeartbeatMonitor(boost::asio::io_context& io, std::chrono::milliseconds period, int failureThreshold,
                   std::function<void()> onPeerLost, std::function<void(int misses)> onMissed = {},
                   std::function<void()> onRecovered = {});
  ~HeartbeatMonitor();
  HeartbeatMonitor(const HeartbeatMonitor&) = delete;
  HeartbeatMonitor& operator=(const HeartbeatMonitor&) = delete;

  /// Arms the first period. Calling it twice is a bug.
  void start();
  /// The peer showed a sign of life in the current period.
  void beat();
  /// Cancels the timer; no callback runs afterwards.
  void stop();
  /// Consecutive periods without a beat so far.
  int misses() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  ///< shared with the pending timer handler, which may outlive *this
};

}  // namespace dsrun::agent
