#include "agent/store_replay_log.h"

namespace dsrun::agent {

bool StoreReplayLog::answer(const wire::StoreWriteId& write, Done done) {
  auto it = slots_.find(keyOf(write));
  if (it == slots_.end()) return false;
  if (it->second.known) {
    const StoreResult result = it->second.result;
    if (done) done(result);
  } else if (done) {
    it->second.waiting.push_back(std::move(done));
  }
  return true;
}

void StoreReplayLog::expect(const wire::StoreWriteId& write) {
  const Key key = keyOf(write);
  if (!slots_.emplace(key, Slot{}).second) return;
  order_.push_back(key);
  while (order_.size() > kCapacity) {
    auto oldest = slots_.find(order_.front());
    // One still waiting for its answer stays (it cannot be re-sent before it has one): only answered ones go.
    if (oldest != slots_.end() && !oldest->second.known) break;
    if (oldest != slots_.end()) slots_.erase(oldest);
    order_.pop_front();
  }
}

void StoreReplayLog::fill(const wire::StoreWriteId& write, const StoreResult& result) {
  auto it = slots_.find(keyOf(write));
  if (it == slots_.end()) return;
  it->second.known = true;
  it->second.result = result;
  auto waiting = std::move(it->second.waiting);
  it->second.waiting.clear();
  for (auto& done : waiting) done(result);
}

void StoreReplayLog::fail(const wire::StoreWriteId& write, const StoreResult& result) {
  auto it = slots_.find(keyOf(write));
  if (it == slots_.end()) return;
  auto waiting = std::move(it->second.waiting);
  slots_.erase(it);  // its place in order_ is skipped when it comes up
  for (auto& done : waiting) done(result);
}

}  // namespace dsrun::agent
