#pragma once
// SshJob: one job on the ssh backend (ssh_backend.h): a libssh session per host, each running that host's
// remote line (`dsrun-launch --watch_stdin ...`), their output forwarded, the first failure anywhere
// stopping every host (EOF on each channel's stdin: dsrun-launch stops its ranks), signals passed down as
// control lines. Nothing starts anywhere until every host is connected and authenticated; the first host
// is connected first (the passwordless-ssh check).
// In an elastic round (Settings::elasticRound, ssh_elastic_rounds.h) it also: ends the round instead of
// throwing when a host cannot be reached; writes a heartbeat line on every channel each heartbeatMs, with
// TCP_USER_TIMEOUT = heartbeatMs x heartbeatMisses on each socket, so a host that goes silent (link down,
// packets dropped) is noticed within that budget and dsrun-launch there (--stdin_timeout_ms) stops its
// ranks when the beats stop; treats a session that ends without an exit status as a lost host; asks
// rescaleWanted at every beat; calls onAllRanksStarted once every host's dsrun-launch wrote its
// nodeStartingLine (ssh_round.h; not forwarded); and reports how it ended (outcome()) instead of printing
// the cause.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "launcher/backend.h"
#include "launcher/backends/ssh_round.h"
#include "launcher/backends/ssh_session.h"
#include "launcher/elastic_training/elastic_rounds.h"

namespace dsrun {

class SshJob {
 public:
  struct Settings {
    double killGraceS = 30;    ///< --kill_grace_s: how long dsrun-launch waits before SIGKILL
    double exitTimeoutS = -1;  ///< --exit_timeout_s (<0: unlimited)
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
  /// How the job ended; valid after run() returned.
  const RoundOutcome& outcome() const { return outcome_; }

 private:
  /// One host's session and its output state.
  struct Node;

  /// Connects every host; false (elastic rounds: outcome_ is End::Unreachable) when one could not be.
  bool connectAll(std::vector<Node>& nodes);
  int loop(std::vector<Node>& nodes);

  std::vector<NodeCommand> commands_;  ///< the remote line of each host
  Connect connect_;                    ///< opens sessions
  Settings settings_;                  ///< fixed at construction
  RoundOutcome outcome_;               ///< see outcome()
};

}  // namespace dsrun
