#pragma once
// What happens to a job's ranks, as plain values (JobEvent), and JobEvents, where the JobTable sends
// them. The SessionManager implements JobEvents by routing each event to the session that launched the
// job (`owner`); that Session alone turns events into wire messages (agent/session_wire.h). An owner
// that has gone drops the events. Loop-thread only.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace dsrun::agent {

enum class OutputStream { Stdout, Stderr };

namespace event {

/// A rank is running.
struct Started {
  std::string jobId;
  int rank = 0;
  pid_t pid = -1;
};

/// Output of a rank: whole lines, except when a line exceeds the chunk size or at end of stream.
struct Output {
  std::string jobId;
  int rank = 0;
  OutputStream stream = OutputStream::Stdout;
  std::string data;
};

/// A rank was reaped and its output drained.
struct Exited {
  std::string jobId;
  int rank = 0;
  pid_t pid = -1;
  std::optional<int> signal;  ///< set: killed by this signal; unset: exited with exitCode
  int exitCode = 0;
  std::string oomEvidence;    ///< non-empty: the OOM killer killed it, known from this source
  std::chrono::system_clock::time_point exitTime;  ///< when it was reaped
};

/// A rank still alive the kill wait after SIGKILL (uninterruptible sleep) that the agent stopped waiting
/// for, so that its job can end. Reported to the launcher as killed by SIGKILL.
struct GivenUp {
  std::string jobId;
  int rank = 0;
  pid_t pid = -1;
  std::string state;  ///< its /proc state then ("D (disk sleep)"), "unknown" if unreadable
  std::chrono::system_clock::time_point exitTime;  ///< when it was given up
};

/// A rank's step counter changed (JobSpec::progressIntervalS).
struct Progress {
  std::string jobId;
  int rank = 0;
  int64_t step = 0;
};

/// A rank of the job could not be started; the ranks already started are being stopped.
struct LaunchFailed {
  std::string jobId;
  std::string message;  ///< "<host> rank <R>: spawn '<argv0>': <strerror>"
  std::vector<int> unstartedRanks;  ///< the failed rank and those after it: never started, never reported
};

}  // namespace event

using JobEvent =
    std::variant<event::Started, event::Output, event::Exited, event::GivenUp, event::Progress, event::LaunchFailed>;

class JobEvents {
 public:
  virtual ~JobEvents() = default;
  /// Hands `event` to the owner's session (dropped if it is gone).
  virtual void deliver(uint64_t owner, JobEvent event) = 0;
  /// True while the owner's write queue is over its high-water mark.
  virtual bool congested(uint64_t owner) const = 0;
  /// Calls `resume` once the owner's queue has drained (at once if it is gone or not congested).
  virtual void whenDrained(uint64_t owner, std::function<void()> resume) = 0;
};

}  // namespace dsrun::agent
