#pragma once
// RemoteJob: the driver of a job whose ranks run on other nodes, each reached through a NodeChannel
// (node_channel.h). It owns every decision the media used to make each their own way:
// - the stop policy (a JobController, common/job_controller.h): the first failure stops every node, the
//   exit timeout runs job-wide from the first "finished cleanly" line, the kill grace (StopTimes) plus the
//   nodes' own kill wait bounds the stop, after which the nodes are killed;
// - signals, handled one way: every signal dsrun receives goes to every node still running, as itself
//   (NodeChannel::signal), except a stop signal the medium answers with a kill while stopping; the first
//   INT/TERM/HUP starts the stop's clock and decides 128+signal;
// - output: every line is forwarded, the nodes' root-cause lines are kept for the closing block, failure
//   and clean-exit lines (failure_line.h) are judged;
// - the root-cause line and, in an elastic round, the round's outcome (elastic_rounds.h);
// - liveness: a heartbeat to every node each period, the elastic controller's rescale question and, for
//   media that report per rank, hang detection (a rank's step not moving for --hang_timeout_s).
// A medium reports per node (ssh, command: the node's program ends, its failure lines are judged) or per
// rank (the agent: RemoteJobSettings::nodeRanks; each rank's start, exit and progress are events, the
// controller's slots are ranks, the earliest failure in time is the root cause, remote_job_ranks.cc).
// No I/O and no clock of its own: the medium's loop reports events with the time, so tests drive it with a
// fake channel. One thread (the medium's loop).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/job_controller.h"
#include "supervision/line_sink.h"
#include "launcher/elastic_training/elastic_rounds.h"
#include "launcher/failure_line.h"
#include "launcher/remote_job/job_output.h"
#include "launcher/remote_job/node_channel.h"
#include "launcher/remote_job/round_facts.h"
#include "common/stop_times.h"

namespace dsrun::launcher {

/// A running rank, for a hang's stack collection.
struct RankOnHost {
  int rank = 0;
  std::string host;
  int pid = 0;
};

/// How a rank ended, as a per-rank medium reports it.
struct RankExit {
  int rank = 0;
  int pid = -1;
  int waitStatus = 0;         ///< waitpid()-style
  std::string oomEvidence;    ///< the kernel's OOM-killer evidence the node found, if any
  std::string givenUpState;   ///< it outlived SIGKILL in this state ("D") and the node gave it up
  int64_t whenUs = 0;         ///< when it ended (wall clock)
};

struct RemoteJobSettings {
  StopTimes stop;                       ///< kill grace (applied by the nodes) and exit timeout (job-wide)
  /// How long a stopped node may take beyond the grace before it is killed (NodeChannel::kill): its own kill
  /// wait (a rank in state D is given up 10 s after its SIGKILL, and reported) plus 5 s. nullopt: the medium
  /// escalates on its own clock (the command medium: kill command, then the launcher command's SIGKILL).
  std::optional<Seconds> nodeKillWait = Seconds(15);
  /// What a stop signal does once the job is stopping: Forward (ssh: dsrun-launch kills on the second one
  /// itself) or Kill (command: the launcher command does not, so dsrun kills).
  SignalWhileStopping whileStopping = SignalWhileStopping::Forward;
  std::string program;                  ///< the user's script, named in the closing root-cause block
  std::map<int, std::string> rankHosts; ///< host of each global rank: the exit timeout names those it stops
  Seconds heartbeat{0.5};               ///< heartbeat period (<= 0: none)
  bool elasticRound = false;            ///< report the outcome instead of printing the cause
  RoundHooks hooks;                     ///< elastic rounds: rescaleWanted, onAllRanksStarted
  /// Per-rank reports (the agent medium): the global ranks of each node, in node order. Empty: the node is
  /// the unit. When set, the nodes apply the grace and report every rank's end, and the clock only bounds
  /// that: ranks whose end has not been reported by the stop's report deadline (the grace + nodeKillWait +
  /// reportSlack from the stop's start) are sent SIGKILL and given up, their hosts named and counted lost;
  /// a second stop signal kills every rank and ends the job at once, a rank ended by the stop
  /// decides the exit code only when nothing failed on its own, heartbeats go on while stopping, and the
  /// driver words the signal notices (the nodes print none).
  std::vector<std::vector<int>> nodeRanks;
  /// Per-rank reports: how long beyond the grace and nodeKillWait the ends may take to reach the driver (the
  /// agent medium: a node lost during the stop noticed by its parent, its children re-attached, their ends
  /// passed up). Never unbounded: a stopping job that waits for an end nobody will report hangs dsrun.
  Seconds reportSlack{30};
  /// Per-rank reports: --each_rank_log_dir on the nodes and the job's log tag, for the root-cause block.
  std::string eachRankLogDir;
  std::string logTag;
  /// Per-rank reports: --hang_timeout_s (<= 0: off). A rank whose step has not moved for this long is hung:
  /// `onHang` is called once with the failure's wording (the medium appends where the stacks went) and the
  /// running ranks, and the medium reports the failure with onFailure when the stacks are in.
  Seconds hangTimeout{0};
  std::function<void(const std::string& what, const std::string& host, std::vector<RankOnHost> running)> onHang;
};

/// `now` (a steady_clock reading in seconds, as the media pass it) as a steady_clock time point.
std::chrono::steady_clock::time_point steadyTimeOf(Seconds now);
/// The media's clock: steady_clock now, in seconds (the `now` every event passes).
Seconds steadyNow();
/// The wall clock in microseconds since the epoch (onSpawnFailed's `whenUs`, a report's time).
int64_t wallClockUs();

class RemoteJob {
 public:
  /// One node per channel, `hosts[i]` reached through `channels[i]` (not owned; they outlive the job).
  /// `out`/`err` are dsrun's stdout and stderr.
  RemoteJob(std::vector<std::string> hosts, std::vector<NodeChannel*> channels, RemoteJobSettings settings,
            LineSink& out, LineSink& err);
  /// The same, writing through `output` (not owned), e.g. a queue that keeps the driver's lines in order
  /// with the ranks' output the medium writes.
  RemoteJob(std::vector<std::string> hosts, std::vector<NodeChannel*> channels, RemoteJobSettings settings,
            JobOutput& output);

  /// Starts every node at `now`; a node that cannot start is lost (after every other one was started, so
  /// that the stop reaches them).
  void start(Seconds now);

  // Events, reported by the medium's loop with the time they were seen.
  /// Node `node` is starting its ranks; once every node said so, hooks.onAllRanksStarted runs.
  void onStarted(size_t node);
  /// One line of the node's output (stderr when `isStderr`), without its newline.
  void onOutput(size_t node, bool isStderr, std::string_view line, Seconds now);
  /// The node's program ended with `exitCode`; `what` words it ("ssh dsn2:22: dsrun-launch exited with code 3").
  void onExited(size_t node, int exitCode, const std::string& what, Seconds now);
  /// The node was lost (its channel closed without an exit status, or went silent); `cause` words it.
  void onLost(size_t node, const std::string& cause, Seconds now);
  /// A signal dsrun received.
  void onSignal(int signal, Seconds now);
  /// Time passed: heartbeats, the rescale question, the exit timeout, the end of the stop's grace.
  void onTime(Seconds now);
  /// The heartbeat period, when the medium learns it after construction (the agents' Welcome); before start().
  void setHeartbeat(Seconds period) { settings_.heartbeat = period; }

  // Per-rank events (settings.nodeRanks), reported by the medium's loop; wall times (`whenUs`, microseconds
  // since the Unix epoch) order the failures for the root cause.
  /// Rank `rank` runs as `pid` on its node; once every rank did, hooks.onAllRanksStarted runs.
  void onRankStarted(int rank, int pid);
  /// Rank `rank` ended (its output was reported first). Unknown or already ended ranks are ignored.
  void onRankExited(const RankExit& exit, Seconds now);
  /// A line of rank `rank`'s stderr (written out by the medium): the root-cause block quotes the last ones.
  void onRankStderr(int rank, std::string_view line);
  /// Rank `rank` reported its step counter.
  void onRankProgress(int rank, int64_t step, Seconds now);
  /// Node `node` could not start its ranks (`what` words it); the job stops and ends with that error.
  void onSpawnFailed(size_t node, const std::string& what, int64_t whenUs, Seconds now);
  /// The node will never start these ranks (a spawn failure): they end without an exit to report.
  void onRanksNeverStarted(const std::vector<int>& ranks, Seconds now);
  /// A failure of no rank's exit (a hang, once its stacks are in); the first one stops the job.
  void onFailure(TimedFailure failure, Seconds now);
  /// Node `node` was lost when it was last heard from, at `whenUs` (per-rank media; onLost otherwise).
  void onLostAt(size_t node, const std::string& cause, int64_t whenUs, Seconds now);

  /// When onTime() must run next; nullopt when nothing is pending.
  std::optional<Seconds> nextDeadline() const;
  /// Every node ended (or was killed with its channel); per rank: every rank ended, or a second stop signal
  /// killed them all (abandoned()).
  bool done() const;
  /// Per rank: a second stop signal killed every rank and the job ends without waiting for their exits.
  bool abandoned() const { return abandoned_; }
  /// Per rank: the start error that stopped the job (the medium raises it once the output is out).
  std::optional<std::string> spawnFailure() const;
  /// The job's exit code, after the closing lines (outside elastic rounds): the first failure line's code,
  /// else 128+signal, else 1 after the exit timeout, else the first event of an elastic round, else the
  /// first node (in node order) that ended non-zero (255: without an exit status), else 0.
  int finish();
  /// How the round ended (elastic rounds); valid after finish().
  const RoundOutcome& outcome() const { return outcome_; }
  /// The failure line that stopped the job, if one did.
  const std::optional<RankFailure>& failure() const { return failure_; }
  /// The stop policy's state, for tests and the medium's loop.
  const JobController& controller() const { return controller_; }

 private:
  RemoteJob(std::vector<std::string> hosts, std::vector<NodeChannel*> channels, RemoteJobSettings settings,
            std::unique_ptr<JobOutput> ownOutput, JobOutput* output = nullptr);
  /// A rank of a per-rank medium.
  struct Rank {
    int rank = 0;
    size_t node = 0;
    size_t slot = 0;                ///< in controller_
    int pid = -1;                   ///< once started
    std::vector<std::string> tail;  ///< the last lines of its stderr
    int64_t step = -1;              ///< last reported step, -1 before the first
    Seconds moved{0};               ///< when `step` last changed
  };
  struct Node {
    std::string host;
    NodeChannel* channel = nullptr;
    bool ended = false;
    std::optional<int> exitCode;  ///< its program's code; nullopt: ended without one (lost)
    std::string what;             ///< how it ended, in words
  };
  /// The node ended; a failure while the job runs stops every node.
  void ended(size_t node, std::optional<int> exitCode, const std::string& what, bool lost, Seconds now);
  /// Something made the job stop: the first one is the round's failure time.
  void detected(Seconds now);
  void addEvent(StopEvent event, Seconds now);
  /// Carries out one of the controller's decisions on every node still running.
  void carryOut(const JobDecision& decision);
  void printExitTimeoutLine();
  bool perRank() const { return !settings_.nodeRanks.empty(); }
  /// Per rank (remote_job_ranks.cc): the signal's decision carried out and worded.
  void onRankSignal(int signal, const JobDecision& decision);
  /// Per rank: a failure's decision; the first one stops every node.
  void afterFailure(const JobDecision& decision, Seconds now);
  /// Per rank: a rank stuck for hangTimeout starts the stack collection (onHang).
  void checkHang(Seconds now);
  /// Per rank: remembers when the stop began (the report deadline runs from there).
  void noteStop(Seconds now);
  /// Per rank: when the ranks still running are given up (giveUpUnreported); nullopt before a stop, or after.
  std::optional<Seconds> reportDeadline() const;
  /// Per rank: the report deadline passed with ranks still running: SIGKILL to every node still reachable,
  /// the silent ones named once and counted lost, so the job ends.
  void giveUpUnreported(Seconds now);
  void exitTimeoutStopped();
  int finishRanks();
  void printRootCauseBlock();
  /// "rank 3 (dsn2 pid 70)".
  std::string who(const Rank& rank) const;
  /// How many ranks are running; how many nodes are reachable.
  size_t liveNodes() const;

  std::vector<Node> nodes_;
  RemoteJobSettings settings_;
  std::unique_ptr<JobOutput> ownOutput_;  ///< the LineSinks' adapter, with the first constructor
  JobOutput& output_;
  JobController controller_;              ///< decides: stops, signals, exit timeout, the grace
  std::optional<RankFailure> failure_;    ///< the failure line that stopped the job
  RootCauseCollector rootCauses_;         ///< the nodes' root-cause lines, for the closing block
  std::string cleanExit_;                 ///< "rank 3 on dsn2": the clean exit that started the exit timeout
  std::vector<int> cleanRanks_;           ///< ranks a node said finished cleanly
  RoundFacts facts_;                      ///< elastic rounds: failures, lost hosts, rescale
  size_t started_ = 0;                    ///< nodes that said they are starting their ranks
  std::optional<Seconds> nextBeat_;       ///< when the next heartbeat is due
  std::optional<Seconds> detectedAt_;     ///< when the first failure (or rescale) was seen
  RoundOutcome outcome_;
  std::map<int, Rank> ranks_;             ///< per rank: by global rank
  size_t startedRanks_ = 0;               ///< per rank: RankStarted reports
  bool launched_ = false;                 ///< start() ran: signals have somewhere to go
  bool abandoned_ = false;                ///< see abandoned()
  bool collectingStacks_ = false;         ///< a hang was seen: its stacks are being taken
  std::optional<Seconds> stopSince_;      ///< per rank: when the job began stopping
  bool gaveUp_ = false;                   ///< per rank: the report deadline passed (giveUpUnreported ran)
};

}  // namespace dsrun::launcher
