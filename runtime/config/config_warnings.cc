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

// Thread-local because tests run several ranks as threads of one process.
thread_local int silencedDepth = 0;

}  // namespace

SilencedWarnings::SilencedWarnings() { ++silencedDepth; }
SilencedWarnings::~SilencedWarnings() { --silencedDepth; }

bool warnOnce(const std::string& message) {
  if (silencedDepth > 0) {
    return false;
  }
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
