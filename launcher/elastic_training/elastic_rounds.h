#pragma once
// ElasticRounds: what the elastic controller (elastic_job.h) needs from a backend. The controller owns the
// policy (membership, restart budget, restart lines, the restart counter); a backend only says which hosts
// answer right now and runs one world to its end, reporting how it ended. Implemented by the agent backend
// (agent_elastic_rounds.h: probe = TLS handshake with dsrun-agent, round = AgentJob) and the ssh backend
// (ssh_elastic_rounds.h: probe = ssh login, round = SshJob).

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launcher/world_plan.h"

namespace dsrun::launcher {

/// One host's answer to ElasticRounds::probe.
struct HostProbe {
  std::string host;     ///< as in the hostfile
  bool ok = false;      ///< the host would accept a launch now
  std::string address;  ///< ok only: the address the host was reached at (MASTER_ADDR when it leads)
  std::string error;    ///< not ok: why, one line naming the host
};

/// How one world (round) ended.
struct RoundOutcome {
  /// Partitioned (agent backend only): the mesh probe found hosts of the world that cannot reach each other
  /// (lostHosts: the suspects to leave out, unreachable: the broken pairs); nothing was started.
  enum class End { Completed, Failed, Signalled, Rescaled, Unreachable, Partitioned };
  End end = End::Completed;
  int exitCode = 0;                      ///< what the round's job returned
  std::string cause;                     ///< the earliest failure ("rank 3 (w2 pid 7) exited with code 1")
  std::vector<std::string> failedHosts;  ///< hosts of the failures that were not consequences of our stop
  std::vector<std::string> lostHosts;    ///< hosts whose connection was lost or went silent
  std::vector<std::string> unreachable;  ///< End::Unreachable: why each host did not accept the launch
  std::chrono::steady_clock::time_point detectedAt{};  ///< when the first failure (or rescale) was seen
};

/// What the controller asks of a running round.
struct RoundHooks {
  /// Asked periodically while the round runs (any thread may have set what it reads): true stops every
  /// rank so that the controller can admit new hosts (End::Rescaled).
  std::function<bool()> rescaleWanted;
  /// Every rank of the round is running; a non-empty answer is printed as a notice on stderr.
  std::function<std::string()> onAllRanksStarted;
};

/// The words the controller's messages use for this backend's hosts.
struct RoundWording {
  std::string notAnswering;  ///< "agent not answering": why an unavailable host is left out
  std::string moreAnswer;    ///< "more agents answer": the cause of a scale-up
  std::string startHint;     ///< the hint when too few hosts answer
  std::string unreachableAtLaunch;  ///< "agents unreachable at launch": the cause of End::Unreachable
};

/// What a world's first host said of its MASTER_PORT before the world was planned.
struct MasterPortCheck {
  std::optional<int> port;  ///< the port to plan with; nullopt: the host could not be asked
  std::string unreachable;  ///< why not, when `port` is nullopt: the world ends as End::Unreachable
};

class ElasticRounds {
 public:
  virtual ~ElasticRounds() = default;

  /// The MASTER_PORT of a world led by `firstHost` (where rank 0's c10d store binds it): `port` checked there,
  /// or a free one picked there when `port` is 0, so that the world is planned with the port its ranks get.
  /// Throws ConfigError when the port cannot be used there. Default: `port` unchecked (ssh has no pre-flight).
  virtual MasterPortCheck checkMasterPort(const std::string& /*firstHost*/, int port) { return {port, {}}; }

  /// Probes `hosts` in parallel, each within `timeout`; results in `hosts` order. `cancel`, when set from
  /// another thread, ends the probes early. Called from the controller's thread and its spare watcher's.
  virtual std::vector<HostProbe> probe(const std::vector<std::string>& hosts, std::chrono::milliseconds timeout,
                                       const std::atomic<bool>* cancel) = 0;

  /// Runs one world to its end on the calling thread (installs its own signal handling while it runs).
  /// Throws dsrun::Error for what a restart cannot fix (e.g. a rank that cannot be spawned).
  virtual RoundOutcome runRound(const WorldPlan& plan, const RoundHooks& hooks) = 0;

  /// The words of the controller's messages.
  virtual RoundWording wording() const = 0;
};

}  // namespace dsrun::launcher
