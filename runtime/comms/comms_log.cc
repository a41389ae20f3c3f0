#include "runtime/comms/comms_log.h"

#include <algorithm>
#include <utility>

namespace dsrt::comms {

void CommsLog::configure(bool enabled, bool profAll, std::vector<std::string> profOps) {
  std::lock_guard<std::mutex> lock(mutex_);
  profAll_ = profAll;
  profOps_ = std::move(profOps);
  enabled_.store(enabled, std::memory_order_relaxed);
}

bool CommsLog::wants(const char* op) const {
  if (!enabled_.load(std::memory_order_relaxed)) {
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  return profAll_ || std::find(profOps_.begin(), profOps_.end(), op) != profOps_.end();
}

void CommsLog::record(CommRecord r) {
  std::lock_guard<std::mutex> lock(mutex_);
  records_.push_back(std::move(r));
}

std::vector<CommRecord> CommsLog::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(records_, {});
}

}  // namespace dsrt::comms
