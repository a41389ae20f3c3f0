#include "agent/heartbeat_monitor.h"

#include "agent/thread_checker.h"
#include "common/error.h"

namespace dsrun::agent {

struct HeartbeatMonitor::Impl {
  Impl(boost::asio::io_context& io) : timer(io) {}

  void arm(const std::shared_ptr<Impl>& self) {
    timer.expires_after(period);
    timer.async_wait([self](const boost::system::error_code& ec) {
      if (ec || self->stopped) return;
      self->tick(self);
    });
  }

  void tick(const std::shared_ptr<Impl>& self) {
    if (seen) {
      seen = false;
      misses = 0;
      arm(self);
      return;
    }
    ++misses;
    if (onMissed) onMissed(misses);
    if (stopped) return;  // onMissed may stop us
    if (misses >= threshold) {
      stopped = true;
      onPeerLost();
      return;
    }
    arm(self);
  }

  boost::asio::steady_timer timer;         ///< one period
  std::chrono::milliseconds period{0};     ///< injected period
  int threshold = 1;                       ///< misses that make the peer lost
  std::function<void()> onPeerLost;        ///< called once
  std::function<void(int)> onMissed;       ///< called per miss (optional)
  std::function<void()> onRecovered;       ///< called on a beat after misses (optional)
  bool seen = false;                       ///< a beat arrived in the current period
  int misses = 0;                          ///< consecutive empty periods
  bool started = false;                    ///< start() was called
  bool stopped = false;                    ///< stop() was called or the peer was lost
  ThreadChecker thread;                    ///< loop-thread confinement
};

HeartbeatMonitor::HeartbeatMonitor(boost::asio::io_context& io, std::chrono::milliseconds period,
                                   int failureThreshold, std::function<void()> onPeerLost,
                                   std::function<void(int)> onMissed, std::function<void()> onRecovered)
    : impl_(std::make_shared<Impl>(io)) {
  DSRUN_CHECK(period.count() > 0, "heartbeat period must be positive, got ", period.count(), " ms");
  DSRUN_CHECK(failureThreshold >= 1, "failure threshold must be at least 1, got ", failureThreshold);
  DSRUN_CHECK(static_cast<bool>(onPeerLost), "onPeerLost is required");
  impl_->period = period;
  impl_->threshold = failureThreshold;
  impl_->onPeerLost = std::move(onPeerLost);
  impl_->onMissed = std::move(onMissed);
  impl_->onRecovered = std::move(onRecovered);
}

HeartbeatMonitor::~HeartbeatMonitor() { stop(); }

void HeartbeatMonitor::start() {
  DSRUN_CHECK_THREAD(impl_->thread);
  DSRUN_CHECK(!impl_->started, "HeartbeatMonitor::start called twice");
  impl_->started = true;
  impl_->arm(impl_);
}

void HeartbeatMonitor::beat() {
  DSRUN_CHECK_THREAD(impl_->thread);
  if (impl_->stopped) return;
  impl_->seen = true;
  if (impl_->misses > 0) {
    impl_->misses = 0;
    if (impl_->onRecovered) impl_->onRecovered();
  }
}

void HeartbeatMonitor::stop() {
  impl_->stopped = true;
  impl_->timer.cancel();
}

int HeartbeatMonitor::misses() const { return impl_->misses; }

}  // namespace dsrun::agent
