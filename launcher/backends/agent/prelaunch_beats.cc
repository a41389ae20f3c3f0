#include "launcher/backends/agent/prelaunch_beats.h"

#include <algorithm>

namespace dsrun::launcher {

PrelaunchBeats::PrelaunchBeats(boost::asio::io_context& io, std::chrono::milliseconds period,
                               std::function<void()> beat)
    : timer_(io), period_(std::max(period, std::chrono::milliseconds(1))), beat_(std::move(beat)) {}

void PrelaunchBeats::start() {
  if (running_) return;
  running_ = true;
  arm();
}

void PrelaunchBeats::stop() {
  running_ = false;
  ++generation_;
  timer_.cancel();
}

void PrelaunchBeats::arm() {
  timer_.expires_after(period_);
  timer_.async_wait([this, generation = generation_](const boost::system::error_code& ec) {
    if (ec || !running_ || generation != generation_) return;
    beat_();
    arm();
  });
}

}  // namespace dsrun::launcher
