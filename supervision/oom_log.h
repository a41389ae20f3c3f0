#pragma once
// OomLog: tells whether the kernel's OOM killer killed a process, so a rank that died of SIGKILL can be
// reported as "out of memory". Two sources, each used when readable: the kernel log
// (/dev/kmsg: "Out of memory: Killed process PID (comm)" or "Memory cgroup out of memory: Killed process
// PID"), read from where it stood when the OomLog was made; and the oom_kill counter of this process's
// cgroup (cgroup v2 memory.events, v1 memory.oom_control), compared with its value then. Not thread-safe.

#include <sys/types.h>

#include <optional>
#include <string>

namespace dsrun {

class OomLog {
 public:
  /// Remembers the current end of the kernel log and the cgroup's oom_kill count.
  OomLog();
  ~OomLog();
  OomLog(const OomLog&) = delete;
  OomLog& operator=(const OomLog&) = delete;

  /// How the OOM kill of `pid` is known ("kernel log", "cgroup memory.events oom_kill"), or nullopt when
  /// neither source shows one. Call after the process was reaped with SIGKILL.
  std::optional<std::string> oomKilled(pid_t pid);

  /// The "Killed process PID (" line for `pid` in kernel-log text; pure (for tests).
  static bool kernelLogNamesPid(const std::string& text, pid_t pid);
  /// The oom_kill value in memory.events / memory.oom_control text, or nullopt; pure (for tests).
  static std::optional<long long> oomKillCount(const std::string& text);

 private:
  int kmsg_ = -1;                       ///< /dev/kmsg, non-blocking, positioned at the end; -1 if unreadable
  std::string kernelLog_;               ///< records read so far (only OOM-related ones are kept)
  std::string countFile_;               ///< the cgroup file holding oom_kill, empty if none
  std::optional<long long> countAtStart_;  ///< its value when made
};

}  // namespace dsrun
