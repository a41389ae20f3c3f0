#include "launcher/backends/agent/connect_pacer.h"

#include <algorithm>
#include <utility>

namespace dsrun::launcher {

ConnectPacer::ConnectPacer(size_t window) : window_(std::max<size_t>(window, 1)) {}

void ConnectPacer::add(std::function<void()> start) {
  if (inFlight_ < window_) {
    ++inFlight_;
    start();
  } else {
    waiting_.push_back(std::move(start));
  }
}

void ConnectPacer::finished() {
  if (inFlight_ > 0) --inFlight_;
  // A start may end at once (a resolve failure reports through finished() again): take it off first.
  while (inFlight_ < window_ && !waiting_.empty()) {
    std::function<void()> next = std::move(waiting_.front());
    waiting_.pop_front();
    ++inFlight_;
    next();
  }
}

}  // namespace dsrun::launcher
