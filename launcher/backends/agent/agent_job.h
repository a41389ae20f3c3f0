#pragma once
// AgentJob: one job run through dsrun-agents, one connection per host (docs/style.md §4: the agent-side
// counterpart of runLocalJob). Connects to every agent in parallel and starts nothing unless all of
// them authenticate and welcome us; then launches each host's ranks, multiplexes their output,
// keeps the connections alive with heartbeats, and drives the job's JobController (common/
// job_controller.h) across nodes: the first failing rank anywhere stops every rank everywhere; the
// earliest failure in time decides the exit code and is named (root_cause.h); the agents apply the grace. run() drives its own io_context on the calling thread;
// ranks' output is written by an OutputWriter thread, and each agent may send at most
// outputWindowBytes ahead of what that thread has written (OutputCredit), so a stalled reader of
// dsrun's stdout slows the ranks down instead of blocking heartbeats or growing memory.

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/job_controller.h"
#include "common/line_buffer.h"
#include "supervision/output_writer.h"
#include "launcher/backends/agent/agent_client.h"
#include "launcher/launch_settings.h"
#include "launcher/elastic_training/elastic_rounds.h"
#include "common/stop_times.h"
#include "launcher/world_plan.h"

namespace dsrun {

class AgentJob {
 public:
  struct Settings {
    int port = 29600;                                  ///< --agent_port
    std::chrono::milliseconds connectTimeout{10000};   ///< connect + TLS + welcome, per agent
    /// The ranks' settings; used here: stop (the kill grace applied by the agents, the exit timeout),
    /// tagOutput ("host:rank | " prefixes) and eachRankLogDir (absolute, on each node). Python, --module and
    /// the core binding are already in the plan's argv and cores; the job id is the plan's.
    RankLaunchSettings launch;
    std::string logTag;                                ///< each-rank log file prefix (one per job)
    std::string program;                               ///< the user's script, named in the root-cause block
    std::string cwd;                                   ///< ranks' working directory on every node
    std::string clientName;                            ///< sent in Hello, shown in the agents' logs
    uint64_t outputWindowBytes = 2u << 20;             ///< per agent: output in flight or queued here
    int silentPeriods = 3;                             ///< agent periods of silence = lost (agents that
                                                       ///< do not promise a beat interval)
    uint32_t agentBeatMs = 500;                        ///< --agent_heartbeat_ms: the agents' beat we ask for
    int silentBeats = 5;                               ///< --agent_heartbeat_misses: missed beats = host lost
    bool meshProbe = true;                             ///< all-pairs probe before the launch (--no_mesh_probe)
    std::chrono::milliseconds meshProbeTimeout{2000};  ///< per pair, in the agents
    /// One round of an elastic job (agent_elastic_rounds.h): no root-cause line (the controller reports the
    /// restart), agents that do not welcome us end the round instead of throwing, and `rescaleWanted` is
    /// asked at every heartbeat: true stops every rank so that the controller can admit new hosts.
    bool elasticRound = false;
    /// --hang_timeout_s: a rank whose step counter (DSRUN_PROGRESS_FILE) has not moved for this long is
    /// hung: the stacks of every rank are written under hangDir and the job fails (or restarts). <= 0: off.
    double hangTimeoutS = 0;
    std::string hangDir;
    std::function<bool()> rescaleWanted;
    /// Every rank of the round reported RankStarted; a non-empty answer is printed as a notice.
    std::function<std::string()> onAllRanksStarted;
  };

  /// How the job ended, for the elastic controller (elastic_rounds.h).
  using Outcome = RoundOutcome;

  /// `ssl` is a client context (tls::makeSslContext); `plan` and `ssl` outlive the job. Output goes
  /// to `outFd` and `errFd` (dsrun's stdout and stderr; not owned).
  AgentJob(const WorldPlan& plan, boost::asio::ssl::context& ssl, Settings settings, int outFd, int errFd);

  /// Runs the job to completion. Returns 0 if every rank exited 0, else the earliest failure's exit
  /// code (128+signal for a signal; 1 for a lost agent), after printing one line naming it, or
  /// 128+signal after a SIGINT/SIGTERM/SIGHUP whose ranks all exited 0. Throws
  /// dsrun::Error, with nothing started anywhere, if any agent cannot be reached or refuses us, and
  /// after stopping everything if an agent could not spawn a rank.
  int run();
  /// Valid after run() returned.
  const Outcome& outcome() const { return outcome_; }

 private:
  struct Node {
    std::string host;                     ///< as in the hostfile
    int nodeRank = 0;                     ///< index in plan.hosts
    std::vector<int> ranks;               ///< global ranks on this host
    std::shared_ptr<AgentClient> client;  ///< the connection
    bool ready = false;                   ///< welcomed
    bool done = false;                    ///< connection ended (or never came up)
    std::string error;                    ///< why the connection ended, if it failed
    uint32_t heartbeatMs = 1000;          ///< the agent's requested period
    uint64_t uncredited = 0;              ///< output written out, not yet returned to the agent
    std::string address;                  ///< Welcome.host_address: the host's address as we dialled it
  };
  struct RankState {
    int rank = 0;        ///< global rank
    std::string host;    ///< its host
    size_t slot = 0;     ///< in controller_ (running there until reported, or lost with its agent)
    int pid = -1;        ///< on its host, once started
    LineBuffer out;      ///< partial stdout line
    LineBuffer err;      ///< partial stderr line
    std::string prefix;  ///< "host:rank | " with --tag_output
    int64_t step = -1;   ///< last step it reported (RankProgress), -1 before the first
    std::chrono::steady_clock::time_point moved;  ///< when `step` last changed
    std::vector<std::string> tail;  ///< the last lines of its stderr (the root-cause block quotes them)
  };

  void connectAll();
  /// The closing block for the job's first failure when it was a rank's (not a lost host or a spawn error).
  void printRootCauseBlock();
  /// An elastic round's MASTER_PORT pre-flight on its first host (agent_port_preflight.cc): sets masterPort_,
  /// or returns the exit code when a signal ended it. Throws as preflightAgentMasterPort does, with every
  /// client closed.
  std::optional<int> preflightMasterPort();
  /// With settings_.meshProbe and two hosts or more: the all-pairs probe (agent_mesh_probe.cc); returns the
  /// exit code when a signal ended it or, in an elastic round, when a pair is broken (End::Partitioned).
  /// Otherwise throws ConfigError naming the first broken pair, with every client closed.
  std::optional<int> probeMesh();
  void launchAll();
  void onRankExited(Node& node, const wire::RankExited& exited);
  void onSpawnError(Node& node, const std::string& message);
  void onNodeLost(Node& node, const std::string& reason);
  /// A failure's decision: the first one stops every rank everywhere.
  void afterFailure(const JobDecision& decision);
  /// A clean exit may have started the exit timeout's clock.
  void armExitTimer(const JobDecision& decision);
  void recordOutcome();
  void stopEverything(int signal);
  /// Sends `signal` to the job's ranks on every node still connected; returns how many nodes.
  size_t signalLiveNodes(int signal);
  void armHeartbeat();
  void armSignals();
  void onExitTimeout();
  void flushOutput(RankState& rank);
  void onOutput(size_t nodeIndex, const wire::OutputChunk& chunk);
  void onWritten(size_t nodeIndex, size_t bytes);
  void checkSilentAgents();
  /// --hang_timeout_s: fails the job when a rank's step has not moved for that long (stacks first).
  void checkHang();
  /// How long `node` may be silent before it counts as lost.
  std::chrono::milliseconds silenceBudget(const Node& node) const;
  void forwardSignal(int signal);
  void notice(const std::string& line);
  int finish();
  std::string who(const RankState& rank) const;
  /// The first SIGINT/SIGTERM/SIGHUP received, 0 if none.
  int firstSignal() const { return controller_.firstSignal().value_or(0); }
  size_t runningRanks() const;
  bool finished() const;

  const WorldPlan& plan_;                          ///< the job
  boost::asio::ssl::context& ssl_;                 ///< client TLS context
  Settings settings_;                              ///< fixed at construction
  StopTimes stop_;                                 ///< settings_.launch's kill grace and exit timeout
  boost::asio::io_context io_;                     ///< the job's only loop
  OutputWriter writer_;                            ///< dsrun's stdout/stderr, on its own thread
  boost::asio::signal_set signals_;                ///< SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2
  boost::asio::steady_timer heartbeat_;            ///< periodic Heartbeat to every agent
  boost::asio::steady_timer exitTimer_;            ///< --exit_timeout_s after the first clean exit
  std::vector<std::unique_ptr<Node>> nodes_;       ///< one per host with ranks, in host order
  std::map<int, RankState> ranks_;                 ///< by global rank
  std::string firstClean_;                         ///< who() of the clean exit that started the exit timeout
  JobController controller_;                       ///< decides: failures, signals, exit timeout, exit code
  bool abandoned_ = false;                         ///< a second stop signal: end now
  bool launched_ = false;                          ///< LaunchRequests have been sent
  int masterPort_ = 0;                             ///< an elastic round's MASTER_PORT (set by preflightMasterPort)
  bool collectingStacks_ = false;                  ///< a hang was seen: its stacks are being taken
  size_t startedRanks_ = 0;                        ///< RankStarted reports received
  bool rescaling_ = false;                         ///< elastic round stopped to admit hosts
  Outcome outcome_;                                ///< see outcome()
};

}  // namespace dsrun
