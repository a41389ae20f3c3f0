#pragma once
// AgentChannel: the agent medium of a remote job (remote_job/node_channel.h): one dsrun-agent connection
// (AgentClient) running one host's ranks. start() sends the host's LaunchRequest, signal/stop/kill are
// SignalRequests for the job (the agent applies the kill grace), a heartbeat is a Heartbeat. It also keeps
// what the medium's loop needs to know of the connection: whether the agent welcomed us, how long it may be
// silent, and the output credit it is owed. A host of an agent tree that dsrun does not dial (a root's
// descendant) has a channel without a connection: its root carries the launch, signals and heartbeats down in
// one pass, so every call to it does nothing. Every method runs on the job's loop thread.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/agent_client.h"
#include "launcher/remote_job/node_channel.h"

namespace dsrun::launcher {

class AgentChannel : public NodeChannel {
 public:
  /// How long an agent may be silent before its host counts as lost.
  struct Silence {
    int periods = 3;  ///< agent periods, for agents that do not promise a beat interval
    int beats = 5;    ///< promised beats (--agent_heartbeat_misses)
  };
  AgentChannel(std::string jobId, Silence silence) : jobId_(std::move(jobId)), silence_(silence) {}

  /// The connection (created by the job's loop, before connect()).
  void attach(std::shared_ptr<AgentClient> client) { client_ = std::move(client); }
  /// The agent welcomed us: launches and signals may be sent.
  void welcomed(const wire::Welcome& welcome);
  /// The connection ended (or never came up) for `reason`.
  void closed(const std::string& reason);
  /// The LaunchRequest start() sends.
  void setLaunch(wire::Envelope launch) { launch_ = std::move(launch); }
  const wire::Envelope& launch() const { return launch_; }

  std::optional<std::string> start() override;
  void signal(int signal) override;
  /// SIGTERM: the agent applies the grace (LaunchRequest.kill_grace_s).
  void stop() override;
  /// SIGKILL; the agent reports the ranks' ends as usual.
  std::optional<std::string> kill() override;
  void heartbeat() override;

  /// Welcomed and not closed.
  bool live() const { return ready_ && !done_; }
  bool ready() const { return ready_; }
  /// Answered: welcomed, or closed before that.
  bool answered() const { return ready_ || done_; }
  const std::string& error() const { return error_; }
  /// The agent's requested period (Welcome.heartbeat_period_ms), at least 20 ms.
  uint32_t heartbeatMs() const { return heartbeatMs_; }
  /// When the agent has been silent past its budget at `now`: closes the connection and says why.
  std::optional<std::string> silentAt(std::chrono::steady_clock::time_point now, const std::string& host);
  /// When the host was last heard from (wall clock, microseconds since the epoch; `fallback` if never).
  int64_t lastHeardUs(int64_t fallback) const;
  /// `bytes` of its output were written out; returned to the agent one quarter window at a time.
  void written(size_t bytes, uint64_t windowBytes);

 private:
  std::chrono::milliseconds silenceBudget() const;

  std::string jobId_;
  Silence silence_;
  std::shared_ptr<AgentClient> client_;  ///< the connection
  wire::Envelope launch_;                ///< what start() sends
  bool ready_ = false;                   ///< welcomed
  bool done_ = false;                    ///< connection ended (or never came up)
  std::string error_;                    ///< why it ended
  uint32_t heartbeatMs_ = 1000;          ///< the agent's requested period
  uint64_t uncredited_ = 0;              ///< output written out, not yet returned to the agent
  std::vector<int> pendingSignals_;      ///< asked for while a re-fanned connection comes up; sent after start()
};

}  // namespace dsrun::launcher
