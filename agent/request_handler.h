#pragma once
// RequestHandler: the agent's protocol logic as a pure function (the Asio HTTP server's
// request_handler): one Envelope from a client plus a view of the session's state in, a list of
// Actions out. No sockets, clocks or processes, so every rule is unit-tested directly.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "proto/agent.pb.h"

namespace dsrun::agent {

/// The interval of the agent's own heartbeats to a client that asked for them (Hello.agent_heartbeats):
/// `requestedMs` (Hello.agent_heartbeat_ms) clamped to [50 ms, half the agent's period], or half the period
/// when the client asked for no particular interval.
uint32_t agentBeatIntervalMs(uint32_t requestedMs, uint32_t periodMs);

/// The longest launcher budget an agent takes over its own: dsrun's budget grows with the job
/// (launcher/backends/agent/silence_budget.h: 15 s at 1,000 nodes x 8 ranks, ~60 s at 4,000), but a cut-off
/// host's ranks must still stop within minutes of their launcher going away.
constexpr uint32_t kLongestLauncherSilenceMs = 120000;

/// The silence after which the agent gives a launcher up, from its first launch on: the launcher's own
/// budget (Hello.launcher_silence_ms), which its host is given up after, shorter or longer than the agent's
/// `ownMs` (--heartbeat_timeout_s); a longer one only up to kLongestLauncherSilenceMs (or `ownMs` if that is
/// longer still). 0 (no budget sent): `ownMs`.
uint64_t launcherSilenceBudgetMs(uint32_t launcherMs, uint64_t ownMs);

/// What the Session must do, in order.
struct Action {
  enum class Kind {
    Send,          ///< write `envelope` to the peer
    MarkWelcomed,  ///< the handshake is complete (Hello accepted)
    Launch,        ///< start `launch` as a new job owned by this session
    Signal,        ///< send `signal` to every rank of `jobId`
    Close,         ///< flush queued writes, then close the connection; `reason` is logged
    Credit,        ///< the client wrote `bytes` of output: the session may send that much more
    CheckPort,     ///< answer with a PortCheckReply for `port` (agent/port_preflight.h)
    ProbeMesh,     ///< run `probe` and answer with its MeshProbeReply (agent/mesh_probe.h)
    TreeLaunch,    ///< admit `envelope.tree_launch()` (agent/tree_gate.h), start its ranks, forward it
    TreeGo,        ///< start the probed tree launch of `jobId` held since its TreeLaunch, and pass it on
    TreeAdopt,     ///< admit `envelope.tree_adopt()`: re-attach the running job to this peer, or start it
    Store,         ///< a StoreRequest from an agent below or a StoreReply from above: `envelope` to the StoreService
  };
  Kind kind;
  wire::Envelope envelope;     ///< Send
  wire::LaunchRequest launch;  ///< Launch
  std::string jobId;     ///< Signal
  int signal = 0;        ///< Signal
  std::string reason;    ///< Close
  uint64_t bytes = 0;    ///< Credit
  int port = 0;          ///< CheckPort: 0 asks for a free port
  wire::MeshProbeRequest probe{};  ///< ProbeMesh
};

/// The part of the agent's state a decision may depend on.
struct SessionView {
  bool welcomed = false;                ///< Hello already accepted on this connection
  std::set<std::string> ownJobs;        ///< running jobs launched by this connection
  std::set<std::string> agentJobs;      ///< running jobs of every connection (ids are agent-wide)
  std::string localAddress;             ///< this end of the connection ("10.0.0.2"): Welcome.host_address
  bool peerIsNode = false;              ///< the peer holds a node certificate: a tree parent, nothing more
};

class RequestHandler {
 public:
  struct Config {
    std::string agentHost;             ///< reported in Welcome
    uint32_t heartbeatPeriodMs = 1000; ///< reported in Welcome: how often the client must beat
    int maxRanksPerJob = 4096;         ///< larger LaunchRequests are refused
    bool treeLaunch = false;           ///< serves tree launches (Welcome.tree_launch)
  };

  explicit RequestHandler(Config config);

  /// Decides what to do with `in`. Never throws for any input: protocol violations become an
  /// Error envelope plus Close (connection-level) or an Error with a job id (request-level).
  std::vector<Action> handle(const wire::Envelope& in, const SessionView& session) const;

  /// As constructed.
  const Config& config() const { return config_; }

  /// Empty if `request` may be launched; otherwise why not (one line naming the offending field).
  static std::string validateLaunch(const wire::LaunchRequest& request, int maxRanks);

 private:
  std::vector<Action> handleHello(const wire::Hello& hello, const SessionView& session) const;
  std::vector<Action> handleLaunch(const wire::LaunchRequest& launch, const SessionView& session) const;
  std::vector<Action> handleSignal(const wire::SignalRequest& signal, const SessionView& session) const;
  std::vector<Action> handlePortCheck(const wire::PortCheckRequest& request) const;
  std::vector<Action> handleMeshProbe(const wire::MeshProbeRequest& request) const;

  Config config_;  ///< fixed at construction
};

/// Name of the message carried by `envelope` ("hello", "launch", ...), for messages and logs.
const char* messageName(const wire::Envelope& envelope);

/// An Envelope holding Error{jobId, message}.
wire::Envelope makeError(const std::string& jobId, const std::string& message);

}  // namespace dsrun::agent
