#include "runtime/config/config_warnings.h"

#include <iostream>
#include <mutex>
#include <set>

namespace dsrt::config {
namespace {

struct WarningState {
  std::mutex mutex;
  std::set<std::string> emitted;
  std::function<void(const std::string&)> sink;
};

WarningState& state() {
  static WarningState s;
  return s;
}

}  // namespace

bool warnOnce(const std::string& message) {
  WarningState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.emitted.insert(message).second) {
    return false;
  }
  if (s.sink) {
    s.sink(message);
  } else {
    std::cerr << "[dsrt] warning: " << message << std::endl;
  }
  return true;
}

void setWarningSinkForTesting(std::function<void(const std::string&)> sink) {
  WarningState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.sink = std::move(sink);
  s.emitted.clear();
}

}  // namespace dsrt::config
