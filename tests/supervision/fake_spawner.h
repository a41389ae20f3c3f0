#pragma once
// FakeSpawner: a Spawner that starts nothing. It hands out increasing pids, records every spawn and
// signal, and can be told to fail a spawn, so supervisor decisions are tested without processes.

#include <map>
#include <string>
#include <vector>

#include "supervision/spawner.h"

namespace dsrun {

class FakeSpawner : public Spawner {
 public:
  /// One recorded spawn() call.
  struct Spawned {
    Command command;       ///< what was asked for
    SpawnOptions options;  ///< how
    pid_t pid;             ///< the pid handed out
  };
  /// One recorded signalGroup() call.
  struct Sent {
    pid_t pgid;  ///< target group
    int signal;  ///< signal number
  };

  /// The next spawn() of a command with this argv[0] throws IoError with `err`, as PosixSpawner would.
  void failNext(const std::string& argv0, int err) { failures_[argv0] = err; }

  Subprocess spawn(const Command& command, const SpawnOptions& options) override;
  void signalGroup(pid_t pgid, int signal) override;

  /// Signals sent to `pgid`, in order.
  std::vector<int> signalsTo(pid_t pgid) const;

  std::vector<Spawned> spawned;  ///< every successful spawn, in order
  std::vector<Sent> sent;        ///< every signal, in order

 private:
  std::map<std::string, int> failures_;  ///< argv[0] -> errno for the next spawn
  pid_t nextPid_ = 1000;                 ///< pid of the next spawn
};

}  // namespace dsrun
