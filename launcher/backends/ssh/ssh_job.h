#pragma once
// SshJob: the ssh medium's loop for one job (ssh_backend.h): a libssh session per host, each an SshChannel
// (ssh_channel.h) running that host's remote line, driven by a RemoteJob (remote_job/remote_job.h), which
// decides everything else (the stop, signals, the exit timeout, heartbeats, the root cause, the elastic
// round's outcome). Nothing starts anywhere until every host is connected and authenticated; the first host
// is connected first (the passwordless-ssh check). In an elastic round (Settings::elasticRound,
// ssh_elastic_rounds.h) a host that cannot be reached ends the round instead of throwing, and each socket
// gets TCP_USER_TIMEOUT = heartbeatMs x heartbeatMisses, so a host that goes silent (link down, packets
// dropped) is noticed within that budget while dsrun-launch there (--stdin_timeout_ms) stops its ranks when
// the beats stop.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "launcher/backend.h"
#include "launcher/backends/ssh/ssh_round.h"
#include "launcher/backends/ssh/ssh_session.h"
#include "launcher/elastic_training/elastic_rounds.h"
#include "common/stop_times.h"

namespace dsrun::launcher {

class SshJob {
 public:
  struct Settings {
    StopTimes stop;            ///< --kill_grace_s (applied by dsrun-launch), --exit_timeout_s (job-wide)
    std::string program;       ///< the user's script, named in the closing root-cause block
    bool elasticRound = false; ///< see the file comment
    int heartbeatMs = 500;     ///< --agent_heartbeat_ms (elastic rounds)
    int heartbeatMisses = 5;   ///< --agent_heartbeat_misses (elastic rounds)
    RoundHooks hooks;          ///< elastic rounds: rescaleWanted, onAllRanksStarted
    std::map<int, std::string> rankHosts;  ///< host of each global rank: the exit timeout names those it stops
  };
  /// Opens an authenticated session to a host (SshSession's constructor with the backend's target); may
  /// be called from several threads at once. Throws dsrun::Error naming the host.
  using Connect = std::function<std::unique_ptr<SshSession>(const std::string& host)>;

  /// One command per host, in node-rank order (SshBackend::nodeCommands).
  SshJob(std::vector<NodeCommand> commands, Connect connect, Settings settings);

  /// Runs the job to its end on the calling thread. Returns 0 if every host's dsrun-launch exited 0, else
  /// the first failure's exit code (255 for a host whose session ended without an exit status), or
  /// 128+signal after SIGINT/SIGTERM/SIGHUP. Throws dsrun::Error, with nothing started, when a host cannot
  /// be reached (outside elastic rounds).
  int run();
  /// How the job ended, with run()'s exit code; valid after run() returned.
  const RoundOutcome& outcome() const { return outcome_; }

 private:
  /// Connects every host, in node-rank order; empty (elastic rounds: outcome_ is End::Unreachable) when one
  /// could not be.
  std::vector<std::unique_ptr<SshSession>> connectAll();
  /// Runs the connected job to its end.
  int loop(std::vector<std::unique_ptr<SshSession>> sessions);

  std::vector<NodeCommand> commands_;  ///< the remote line of each host
  Connect connect_;                    ///< opens sessions
  Settings settings_;                  ///< fixed at construction
  RoundOutcome outcome_;               ///< see outcome()
};

}  // namespace dsrun::launcher
