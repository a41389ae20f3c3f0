#pragma once
// PrelaunchBeats: dsrun's heartbeats to the agents it is connected to, from the first welcome until the
// launch, when the driver (RemoteJob) takes over. An agent gives its launcher up after its own timeout
// (10 s) from the welcome on; connecting to 1,000 agents, the mesh probe and the port check take longer
// than that on a loaded machine, and agents welcomed first dropped dsrun before the launch
// (docs/benchmarks.md "Launch at scale"). Loop-thread only.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>

namespace dsrun::launcher {

class PrelaunchBeats {
 public:
  /// `beat` sends one heartbeat to every welcomed agent; it is called every `period` while started.
  PrelaunchBeats(boost::asio::io_context& io, std::chrono::milliseconds period, std::function<void()> beat);

  void start();
  /// No beat after this (the pending wait is cancelled); start() may follow.
  void stop();
  bool running() const { return running_; }

 private:
  void arm();

  boost::asio::steady_timer timer_;
  std::chrono::milliseconds period_;
  std::function<void()> beat_;
  bool running_ = false;
  uint64_t generation_ = 0;  ///< a wait armed before the last stop() is stale even if it already fired
};

}  // namespace dsrun::launcher
