#pragma once
// StopTimes: how long a job may take to stop, as one value in seconds from the command line to whatever
// carries the job out (std::chrono, no millisecond detour): the kill grace (stop signal -> SIGKILL) and the
// exit timeout (first clean exit -> the others are stopped). It lives in common/ because both the launcher
// (RankLaunchSettings, the remote-job drivers) and the local supervision below it (LocalJobOptions) hold it.

#include <chrono>
#include <optional>
#include <tuple>

namespace dsrun {

/// Seconds, fractional: --kill_grace_s=0.5 stays 0.5 s.
using Seconds = std::chrono::duration<double>;

struct StopTimes {
  Seconds killGrace{30};               ///< --kill_grace_s: a stopped rank's SIGTERM -> SIGKILL delay
  std::optional<Seconds> exitTimeout;  ///< --exit_timeout_s; nullopt: unlimited

  /// From the option values as written (exitTimeoutS < 0: unlimited).
  static StopTimes fromOptions(double killGraceS, double exitTimeoutS) {
    StopTimes times;
    times.killGrace = Seconds(killGraceS);
    if (exitTimeoutS >= 0) times.exitTimeout = Seconds(exitTimeoutS);
    return times;
  }
  /// The exit timeout as the option writes it (<0: unlimited), for the messages and the JobController.
  double exitTimeoutS() const { return exitTimeout ? exitTimeout->count() : -1; }

  bool operator==(const StopTimes& o) const {
    return std::tie(killGrace, exitTimeout) == std::tie(o.killGrace, o.exitTimeout);
  }
  bool operator!=(const StopTimes& o) const { return !(*this == o); }
};

}  // namespace dsrun
