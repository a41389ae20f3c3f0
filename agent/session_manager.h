#pragma once
// SessionManager: owns the live sessions (the Asio HTTP server's connection_manager) and routes job
// events to the session that launched the job, which turns them into wire messages. Loop-thread only.

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "agent/job_events.h"
#include "agent/thread_checker.h"

namespace dsrun::agent {

class Session;

class SessionManager : public JobEvents {
 public:
  /// Registers and starts `session`.
  void start(std::shared_ptr<Session> session);
  /// Forgets a session that has stopped (called by Session::stop).
  void remove(uint64_t id);
  /// Asks every session to tell its peer the agent is going away and close.
  void drainAll();
  /// Closes every session at once.
  void stopAll(const std::string& reason);
  size_t size() const { return sessions_.size(); }
  /// The live (or orphaned, awaiting adoption) session `id`; null if it has gone.
  std::shared_ptr<Session> find(uint64_t id) const;
  /// The session (live, or orphaned awaiting adoption) carrying tree job `jobId`; null if none.
  std::shared_ptr<Session> treeCarrier(const std::string& jobId) const;

  void deliver(uint64_t owner, JobEvent event) override;
  bool congested(uint64_t owner) const override;
  void whenDrained(uint64_t owner, std::function<void()> resume) override;

 private:
  std::map<uint64_t, std::shared_ptr<Session>> sessions_;  ///< live sessions by id
  ThreadChecker thread_;                                   ///< loop-thread confinement
};

}  // namespace dsrun::agent
