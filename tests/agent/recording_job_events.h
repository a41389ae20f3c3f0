#pragma once
// RecordingJobEvents: a JobEvents that keeps every event by owner, never congested, for tests of the
// JobTable without sessions or sockets.

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "agent/job_events.h"

namespace testing {

using dsrun::agent::JobEvent;

struct RecordingJobEvents : dsrun::agent::JobEvents {
  void deliver(uint64_t owner, JobEvent event) override { events[owner].push_back(std::move(event)); }
  bool congested(uint64_t) const override { return false; }
  void whenDrained(uint64_t, std::function<void()> resume) override { resume(); }

  /// The events of type E `owner` got, in order.
  template <typename E>
  std::vector<E> of(uint64_t owner) const {
    std::vector<E> out;
    auto it = events.find(owner);
    if (it == events.end()) return out;
    for (const JobEvent& e : it->second) {
      if (const E* typed = std::get_if<E>(&e)) out.push_back(*typed);
    }
    return out;
  }

  std::map<uint64_t, std::vector<JobEvent>> events;  ///< by owner, in delivery order
};

}  // namespace testing
