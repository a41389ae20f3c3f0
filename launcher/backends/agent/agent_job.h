#pragma once
// AgentJob: the agent medium's loop (docs/remote_job.md): one job run through dsrun-agents, one connection
// (AgentChannel) per host, driven by RemoteJob in its per-rank mode, which decides every stop, signal, exit
// timeout, hang and closing line. AgentJob connects to every agent in parallel (a tree: its roots) and starts
// nothing unless all of them authenticate and welcome us (a tree: every agent holds its launch,
// agent_tree_assembly.cc; the mesh probe rides on that round, or follows the star's welcomes), builds each host's
// LaunchRequest, and translates the agents' wire events into the driver's, with the time. run() drives its own
// io_context on the calling thread; ranks' output is written by an OutputWriter thread, and each agent may send
// at most outputWindowBytes ahead of what that thread has written (OutputCredit), so a stalled reader of dsrun's
// stdout slows the ranks down instead of blocking heartbeats or growing memory.

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/line_buffer.h"
#include "supervision/output_writer.h"
#include "launcher/backends/agent/agent_channel.h"
#include "client/agent_client.h"
#include "launcher/backends/agent/agent_tree_build.h"
#include "launcher/backends/agent/agent_tree_plan.h"
#include "launcher/backends/agent/connect_pacer.h"
#include "launcher/backends/agent/prelaunch_beats.h"
#include "launcher/launch_settings.h"
#include "launcher/elastic_training/elastic_rounds.h"
#include "common/stop_times.h"
#include "launcher/remote_job/remote_job.h"
#include "launcher/world_plan.h"

namespace dsrun::launcher {

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
    /// The mesh probe before the launch (--no_mesh_probe): the star's (agent_mesh_probe.h) or the tree's
    /// (agent_tree_probe.h).
    bool meshProbe = true;
    std::chrono::milliseconds meshProbeTimeout{2000};  ///< per pair, in the agents
    /// One round of an elastic job (agent_elastic_rounds.h): no root-cause line (the controller reports the
    /// restart), agents that do not welcome us end the round instead of throwing, and hooks.rescaleWanted is
    /// asked at every heartbeat: true stops every rank so that the controller can admit new hosts.
    bool elasticRound = false;
    /// --hang_timeout_s: a rank whose step counter (DSRUN_PROGRESS_FILE) has not moved for this long is
    /// hung: the stacks of every rank are written under hangDir and the job fails (or restarts). <= 0: off.
    double hangTimeoutS = 0;
    std::string hangDir;
    /// --tree_width: dsrun dials only the roots of the agent tree (agent_tree_plan.h) and sends each its
    /// signed TreeLaunch; the roots relay their subtrees' events and pass signals down. 0: every agent.
    int treeWidth = 0;
    bool agentRendezvous = false;  ///< --rendezvous agent: each launch names rank 0's agent as the store's root
    std::string tlsDir;  ///< --tls_dir: the launcher key that signs a tree launch
    RoundHooks hooks;  ///< elastic rounds: rescaleWanted, onAllRanksStarted (every rank reported RankStarted)
  };

  /// How the job ended, for the elastic controller (elastic_rounds.h).
  using Outcome = RoundOutcome;

  /// `ssl` is a client context (tls::makeSslContext); `plan` and `ssl` outlive the job. Output goes
  /// to `outFd` and `errFd` (dsrun's stdout and stderr; not owned).
  AgentJob(const WorldPlan& plan, boost::asio::ssl::context& ssl, Settings settings, int outFd, int errFd);
  ~AgentJob();

  /// Runs the job to completion (outcome() then holds the same code). Returns 0 if every rank exited 0, else the earliest failure's exit
  /// code (128+signal for a signal; 1 for a lost agent), after printing one line naming it, or
  /// 128+signal after a SIGINT/SIGTERM/SIGHUP whose ranks all exited 0. Throws
  /// dsrun::Error, with nothing started anywhere, if any agent cannot be reached or refuses us, and
  /// after stopping everything if an agent could not spawn a rank.
  int run();
  /// Valid after run() returned, with run()'s exit code.
  const Outcome& outcome() const { return outcome_; }

 private:
  struct Node {
    std::string host;                     ///< as in the hostfile
    int nodeRank = 0;                     ///< index in plan.hosts
    std::vector<int> ranks;               ///< global ranks on this host
    std::unique_ptr<AgentChannel> channel;
    std::shared_ptr<AgentClient> client;  ///< the connection (the channel's)
  };
  /// A rank's output as it arrives: partial lines and the prefix.
  struct RankOutput {
    LineBuffer out;      ///< partial stdout line
    LineBuffer err;      ///< partial stderr line
    std::string prefix;  ///< "host:rank | " with --tag_output
  };
  class WriterOutput;

  RemoteJobSettings driverSettings();
  /// The heartbeat budget: agentBeatMs x silentBeats, after which a silent agent (or we, to it) counts as lost.
  std::chrono::milliseconds silenceBudget() const {
    return std::chrono::milliseconds(settings_.agentBeatMs) * settings_.silentBeats;
  }
  /// Every host's launch message: its LaunchRequest, or with treeWidth a root's signed TreeLaunch (the other
  /// hosts get theirs from their parents). Throws ConfigError when the launcher key cannot sign.
  /// The star's requests, or the tree's launch started building (treeBuild_).
  void prepareLaunches();
  /// Waits for the tree's launch and gives each root's channel its own; on a build error closes the
  /// connections and rethrows.
  void installTreeLaunches();
  /// Closes every connection dsrun opened.
  void closeAll();
  /// A root relayed NodeLost: that host is lost (its parent adopts its children).
  void onTreeNodeLost(size_t rootIndex, const wire::NodeLost& lost);
  void connectAll();
  /// Opens the connection of `nodeIndex` (a root, or with `adoption` a lost root's child that dsrun now
  /// dials itself: its TreeAdopt goes out as soon as it welcomes us, since the driver has started).
  void dial(size_t nodeIndex, bool adoption);
  /// A root dsrun dialled is lost: only its own ranks are; dsrun adopts its children, as an agent adopts a
  /// lost child's (docs/agent.md "An interior agent dies").
  void onRootLost(size_t nodeIndex, const std::string& reason);
  /// The agent of `nodeIndex` refused what we sent it (a job-scoped Error naming no unstarted ranks; a tree
  /// parent turns its children's refusals into NodeLost, so only a connection's own agent says this): the
  /// agent starts and reports nothing for it, so its part ends here (agent_refusal.cc).
  void onRefused(size_t nodeIndex, const std::string& what);
  /// Dials the tree children of `nodeIndex` with TreeAdopt (their launches cut from the one it was sent).
  void adoptChildren(size_t nodeIndex);
  /// A stop signal arrived before the launch (`during` says when): every connection closed, nothing started.
  /// Returns 128+signal, also kept in outcome_.
  int nothingStarted(const std::string& during);
  /// An elastic round ends before any rank started (agents unreachable, a broken pair): the outcome says how,
  /// for the controller to re-form the world without `lostHosts`. Returns its exit code (1).
  int roundEndedUnstarted(Outcome::End end, std::vector<std::string> unreachable, std::vector<std::string> lostHosts);
  /// With settings_.meshProbe and two hosts or more: the all-pairs probe (agent_mesh_probe.cc); returns the
  /// exit code when a signal ended it or, in an elastic round, when a pair is broken (End::Partitioned).
  /// Otherwise throws ConfigError naming the first broken pair, with every client closed.
  std::optional<int> probeMesh();
  /// A tree of two levels or more (or with the probe): assembled before anything starts (agent_tree_assembly.cc).
  /// Each root that can hold gets its launch with `probe`, and its channel's launch becomes TreeGo; every node
  /// holds its ranks, probes its part's targets (`probe`; none without) and reports up once its children have.
  /// Returns or throws as probeMesh; a node lost meanwhile ends it as an unreachable agent does, nothing
  /// started (End::Unreachable in an elastic round, naming that host alone).
  std::optional<int> assembleTree(bool probe);
  /// A root's merged report (only while assembling_).
  void onTreeProbeReport(size_t rootIndex, const wire::TreeProbeReport& report);
  /// A node (a root's connection, or a NodeLost relayed up) lost while assembling_: nothing has started.
  void onProbeLost(size_t nodeIndex, const std::string& reason);
  /// Prepares every host's LaunchRequest and starts the driver.
  void launchAll();
  /// Arms the timer for the driver's next deadline, when it changed.
  void armTimer();
  /// The driver's deadline passed: silent agents are lost, then the driver's clock runs.
  void onTimer(Seconds deadline);
  void armSignals();
  /// The host's connection ended (or went silent) after it welcomed us.
  void onNodeLost(size_t nodeIndex, const std::string& reason);
  /// --hang_timeout_s (RemoteJobSettings::onHang): takes the running ranks' stacks without blocking the loop.
  void collectHungStacks(const std::string& what, const std::string& host, std::vector<RankOnHost> running);
  void flushOutput(int rank);
  void onOutput(size_t nodeIndex, const wire::OutputChunk& chunk);
  void onWritten(size_t nodeIndex, size_t bytes);
  void notice(const std::string& line);
  int finish();
  /// The first SIGINT/SIGTERM/SIGHUP received, 0 if none.
  int firstSignal() const { return job_->controller().firstSignal().value_or(0); }

  const WorldPlan& plan_;                          ///< the job
  boost::asio::ssl::context& ssl_;                 ///< client TLS context
  Settings settings_;                              ///< fixed at construction
  StopTimes stop_;                                 ///< settings_.launch's kill grace and exit timeout
  boost::asio::io_context io_;                     ///< the job's only loop
  OutputWriter writer_;                            ///< dsrun's stdout/stderr, on its own thread
  std::unique_ptr<WriterOutput> driverOutput_;     ///< the driver's lines, queued on writer_
  boost::asio::signal_set signals_;                ///< SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2
  boost::asio::steady_timer timer_;                ///< the driver's next deadline
  std::optional<Seconds> armedFor_;                ///< what timer_ waits for
  std::vector<std::unique_ptr<Node>> nodes_;       ///< one per host with ranks, in host order
  /// Per node: one past the last node of its subtree in the agent tree (itself alone without a tree); a node
  /// is dialled when it has no parent.
  std::vector<size_t> subtreeEnd_;
  std::optional<AgentTreePlan> tree_;              ///< --tree_width: the tree, planned once; nullopt: the star
  std::vector<bool> dialled_;
  std::unique_ptr<TreeLaunchBuild> treeBuild_;     ///< the tree's launch while it is built (prepareLaunches)
  std::map<size_t, wire::Envelope> rootLaunches_;  ///< tree: each root's signed TreeLaunch, by node index
  bool assembling_ = false;                        ///< the tree holds its launch (assembleTree): nothing started
  std::set<size_t> probeWaiting_;                  ///< roots whose probe report has not come
  std::vector<wire::TreeProbeReport> probeReports_;  ///< the roots' reports
  std::map<std::string, std::string> probeLost_;   ///< hosts lost while probing, with the line naming each
  bool launched_ = false;  ///< launchAll() has run: the driver started and the launches went out
  std::map<int, RankOutput> output_;               ///< by global rank
  std::unique_ptr<RemoteJob> job_;                 ///< decides
  ConnectPacer pacer_;                             ///< how many connections connectAll has under way
  PrelaunchBeats prelaunchBeats_;                  ///< our beats to the welcomed agents until the driver's start
  Outcome outcome_;                                ///< see outcome()
};

}  // namespace dsrun::launcher
