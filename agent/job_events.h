#pragma once
// JobEvents: where the ProcessTable sends what happens to a job's ranks. The SessionManager
// implements it by routing to the session that launched the job (`owner`); an owner that has gone
// drops the events. Loop-thread only.

#include <cstdint>
#include <functional>

#include "proto/agent.pb.h"

namespace dsrun::agent {

class JobEvents {
 public:
  virtual ~JobEvents() = default;
  /// Queues `envelope` for the owner's connection (dropped if it is gone).
  virtual void deliver(uint64_t owner, Envelope envelope) = 0;
  /// True while the owner's write queue is over its high-water mark.
  virtual bool congested(uint64_t owner) const = 0;
  /// Calls `resume` once the owner's queue has drained (at once if it is gone or not congested).
  virtual void whenDrained(uint64_t owner, std::function<void()> resume) = 0;
};

}  // namespace dsrun::agent
