#pragma once
// CommandChannel: the command medium of a remote job (remote_job/node_channel.h): the one local command a
// CommandBackend built (pdsh, mpirun, srun), which reaches every node. It is the driver's only node.
// How a decision reaches the nodes is this file's: with a signal command (pdsh) every signal dsrun receives
// is queued and passed on by one signal command at a time, in order (SIGINT stays SIGINT); without one, a
// stop signal stops the job and USR1/USR2 go to the launcher command's process (srun and mpirun forward
// them). The stop is the backend's kill command, else `stopSignal` to the launcher command; after the grace
// and the nodes' kill wait it escalates on its own clock (tick): the kill command if it did not run yet,
// then SIGTERM and SIGKILL to the launcher command. With a kill command, an OrphanGuard runs it if dsrun
// itself is killed.

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/command.h"
#include "supervision/line_sink.h"
#include "supervision/posix_spawner.h"
#include "common/unique_fd.h"
#include "launcher/orphan_guard.h"
#include "launcher/remote_job/node_channel.h"
#include "launcher/remote_job/remote_job.h"
#include "common/stop_times.h"

namespace dsrun::launcher {

class CommandChannel : public NodeChannel {
 public:
  struct Spec {
    Command command;              ///< the launcher command
    std::optional<Command> kill;  ///< stops the job on every node (pdsh); nullopt: signal `command` instead
    std::function<Command(const std::vector<int>&)> signal;  ///< passes signals to every node's ranks (pdsh)
    int stopSignal = 15;          ///< what `command` gets when the job must stop and there is no kill command
    Seconds killGrace{30};        ///< the nodes' grace, before this channel escalates
  };
  /// `err` carries the channel's own messages (dsrun's stderr).
  CommandChannel(Spec spec, LineSink& err);

  /// Spawns the launcher command. Throws IoError when it cannot be spawned.
  std::optional<std::string> start() override;
  void signal(int signal) override;
  void stop() override;
  /// The kill command (once) and SIGKILL to the launcher command; its end is still reported.
  std::optional<std::string> kill() override;
  void heartbeat() override {}

  /// The launcher command's stdout and stderr, once started (the caller reads them).
  UniqueFd takeStdout() { return std::move(stdout_); }
  UniqueFd takeStderr() { return std::move(stderr_); }
  /// Reaps what ended (the launcher command is reported to `job` as node 0), passes queued signals on, and
  /// escalates a stop that outlived its grace.
  void tick(RemoteJob& job, Seconds now);
  /// A helper command (kill or signal) or the launcher command is still running.
  bool busy() const { return main_ > 0 || kill_ > 0 || signal_ > 0; }
  /// The job ended normally: the OrphanGuard need not run the kill command.
  void disarm();

 private:
  bool runKill();
  void passSignals();
  /// The stop began: its escalation is due after the grace and the nodes' kill wait.
  void armEscalation();

  Spec spec_;
  LineSink& err_;
  PosixSpawner spawner_;
  UniqueFd stdout_, stderr_;
  pid_t main_ = -1;                   ///< the launcher command, while it runs
  pid_t kill_ = -1;                   ///< the kill command, while it runs
  pid_t signal_ = -1;                 ///< the signal command running, if any
  std::vector<int> pendingSignals_;   ///< received, not yet passed on (in order)
  std::string signalNames_;           ///< what signal_ carries, for its failure line
  bool killStarted_ = false;          ///< the kill command was run
  bool escalated_ = false;            ///< the launcher command was sent SIGTERM after the grace
  std::optional<Seconds> deadline_;   ///< next step of the escalation once stopping
  std::optional<OrphanGuard> guard_;  ///< runs the kill command if dsrun is killed
};

}  // namespace dsrun::launcher
