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
// - liveness: a heartbeat to every node each period, and the elastic controller's rescale question.
// No I/O and no clock of its own: the medium's loop reports events with the time, so tests drive it with a
// fake channel. One thread (the medium's loop).

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/job_controller.h"
#include "supervision/line_sink.h"
#include "launcher/elastic_training/elastic_rounds.h"
#include "launcher/failure_line.h"
#include "launcher/remote_job/node_channel.h"
#include "launcher/remote_job/round_facts.h"
#include "common/stop_times.h"

namespace dsrun {

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
};

class RemoteJob {
 public:
  /// One node per channel, `hosts[i]` reached through `channels[i]` (not owned; they outlive the job).
  /// `out`/`err` are dsrun's stdout and stderr.
  RemoteJob(std::vector<std::string> hosts, std::vector<NodeChannel*> channels, RemoteJobSettings settings,
            LineSink& out, LineSink& err);

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

  /// When onTime() must run next; nullopt when nothing is pending.
  std::optional<Seconds> nextDeadline() const;
  /// Every node ended (or was killed with its channel).
  bool done() const;
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

  std::vector<Node> nodes_;
  RemoteJobSettings settings_;
  LineSink& out_;
  LineSink& err_;
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
};

}  // namespace dsrun
