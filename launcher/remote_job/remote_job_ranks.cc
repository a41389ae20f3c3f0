// RemoteJob's per-rank half (remote_job.h, settings.nodeRanks): the agent medium reports each rank's start,
// exit and progress, so the controller's slots are ranks, the earliest failure in time is the root cause and
// the driver words what the nodes do not (the signal notices, a rank given up in state D, a hang).

#include <algorithm>
#include <csignal>
#include <limits>

#include "common/error.h"
#include "common/exit_status.h"
#include "common/exit_timeout_line.h"
#include "common/root_cause.h"
#include "common/strings.h"
#include "launcher/failure_line.h"
#include "launcher/remote_job/remote_job.h"
#include "supervision/rank_log.h"

namespace dsrun::launcher {

namespace {

std::string plural(size_t n, const char* word) { return strCat(n, " ", word, n == 1 ? "" : "s"); }

/// How many hosts a give-up line names before "and N more" (a tree of 1,000 nodes may lose a subtree).
constexpr size_t kNamedHosts = 8;

}  // namespace

void RemoteJob::onRankStarted(int rank, int pid) {
  auto it = ranks_.find(rank);
  if (it == ranks_.end()) return;
  it->second.pid = pid;
  if (++startedRanks_ != ranks_.size() || !settings_.hooks.onAllRanksStarted) return;
  const std::string notice = settings_.hooks.onAllRanksStarted();
  if (!notice.empty()) output_.line(true, notice);
}

void RemoteJob::onRankExited(const RankExit& exit, Seconds now) {
  auto it = ranks_.find(exit.rank);
  if (it == ranks_.end() || !controller_.running(it->second.slot)) return;
  Rank& r = it->second;
  r.pid = exit.pid;
  const std::string& host = nodes_[r.node].host;
  std::string how = describeWaitStatus(exit.waitStatus);
  if (!exit.oomEvidence.empty()) {
    how += strCat(": out of memory (the kernel's OOM killer, per the ", exit.oomEvidence, " on ", host, ")");
  }
  if (!exit.givenUpState.empty()) {
    // Alive 10 s after the node's SIGKILL (state D): the node gave it up so that the job can end.
    how = strCat("is still alive 10s after SIGKILL, in state ", exit.givenUpState, "; ", host,
                 "'s agent gave up on it");
    output_.line(true, strCat("dsrun: ", who(r), " ", how));
  }
  const JobDecision decision =
      controller_.onRankExit(r.slot, exit.waitStatus, now.count(), strCat(who(r), " ", how), host, exit.whenUs);
  afterFailure(decision, now);
  if (decision.exitTimeoutArmed) cleanExit_ = who(r);
}

void RemoteJob::onRankStderr(int rank, std::string_view line) {
  if (auto it = ranks_.find(rank); it != ranks_.end()) keepTailLine(it->second.tail, line);
}

void RemoteJob::onRankProgress(int rank, int64_t step, Seconds now) {
  auto it = ranks_.find(rank);
  if (it == ranks_.end() || step == it->second.step) return;
  it->second.step = step;
  it->second.moved = now;
}

void RemoteJob::onSpawnFailed(size_t node, const std::string& what, int64_t whenUs, Seconds now) {
  DSRUN_CHECK(node < nodes_.size(), "node ", node, " of ", nodes_.size());
  // The node has already stopped its other ranks; they report their exits as usual.
  afterFailure(controller_.onSpawnFailed(TimedFailure{whenUs, 1, what, nodes_[node].host}, now.count()), now);
}

void RemoteJob::onRanksNeverStarted(const std::vector<int>& ranks, Seconds now) {
  for (int rank : ranks) {
    const auto it = ranks_.find(rank);
    if (it != ranks_.end()) controller_.onRankGone(it->second.slot, now.count());
  }
}

void RemoteJob::onFailure(TimedFailure failure, Seconds now) {
  afterFailure(controller_.onFailure(std::move(failure), now.count()), now);
}

void RemoteJob::onLostAt(size_t index, const std::string& cause, int64_t whenUs, Seconds now) {
  DSRUN_CHECK(perRank(), "a per-node medium reports a lost node with onLost");
  DSRUN_CHECK(index < nodes_.size(), "node ", index, " of ", nodes_.size());
  Node& node = nodes_[index];
  if (node.ended) return;
  node.ended = true;
  node.what = cause;
  std::vector<std::string> lost;
  std::vector<size_t> slots;
  for (int rank : settings_.nodeRanks[index]) {
    const Rank& r = ranks_.at(rank);
    if (!controller_.running(r.slot)) continue;
    lost.push_back(who(r));
    slots.push_back(r.slot);
  }
  if (lost.empty()) return;  // everything there had already finished
  afterFailure(controller_.onHostLost(slots, TimedFailure{whenUs, 1, strCat(cause, "; lost ", join(lost, ", ")), node.host},
                                      now.count()),
               now);
}

void RemoteJob::afterFailure(const JobDecision& decision, Seconds now) {
  // Only the first failure while the job runs stops it; the earliest in time is named at the end.
  if (decision.action != JobDecision::Action::Stop) return;
  detected(now);
  carryOut(decision);
  noteStop(now);
}

void RemoteJob::noteStop(Seconds now) {
  if (perRank() && controller_.stopping() && !stopSince_) stopSince_ = now;
}

std::optional<Seconds> RemoteJob::reportDeadline() const {
  if (!stopSince_ || gaveUp_ || abandoned_) return std::nullopt;
  return *stopSince_ + settings_.stop.killGrace + settings_.nodeKillWait.value_or(Seconds(0)) + settings_.reportSlack;
}

void RemoteJob::giveUpUnreported(Seconds now) {
  gaveUp_ = true;
  std::vector<size_t> silent;
  std::vector<std::string> named;
  size_t ranks = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    std::vector<std::string> unreported;
    for (int rank : settings_.nodeRanks[i]) {
      if (controller_.running(ranks_.at(rank).slot)) unreported.push_back(std::to_string(rank));
    }
    if (unreported.empty()) continue;
    silent.push_back(i);
    ranks += unreported.size();
    if (named.size() < kNamedHosts) named.push_back(strCat(nodes_[i].host, " (rank", unreported.size() == 1 ? " " : "s ", join(unreported, ", "), ")"));
  }
  const std::string more = silent.size() > named.size() ? strCat(" and ", silent.size() - named.size(), " more") : "";
  const Seconds waited = now - *stopSince_;
  const std::string why = strCat("no end reported within ", static_cast<int64_t>(waited.count()), " s of the stop (",
                                 "the kill grace ", settings_.stop.killGrace.count(), " s, then ",
                                 (settings_.nodeKillWait.value_or(Seconds(0)) + settings_.reportSlack).count(),
                                 " s for the agents to report)");
  output_.line(true, strCat("dsrun: ", plural(ranks, "rank"), " on ", plural(silent.size(), "host"), " ", why, ": ",
                            join(named, "; "), more, "; sent SIGKILL to every host still connected and gave them up"));
  // Every node still connected, not only the silent ones: in a tree, a silent node is reached through its root.
  JobDecision kill;
  kill.action = JobDecision::Action::Kill;
  kill.signal = SIGKILL;
  carryOut(kill);
  // After every other failure in time: the one that stopped the job stays the root cause.
  constexpr int64_t kAfterAll = std::numeric_limits<int64_t>::max();
  for (size_t i : silent) onLostAt(i, strCat("host ", nodes_[i].host, ": ", why), kAfterAll, now);
}

void RemoteJob::onRankSignal(int signal, const JobDecision& decision) {
  const std::string received = strCat("dsrun: received ", signalName(signal));
  switch (decision.action) {
    case JobDecision::Action::Forward:  // SIGUSR1/SIGUSR2 (a preemption warning): the ranks decide what to do
      if (!launched_) {
        output_.line(true, received + " before any rank started; not forwarded");
        return;
      }
      for (Node& node : nodes_) {
        if (!node.ended) node.channel->signal(signal);
      }
      output_.line(true, strCat(received, "; forwarded it to ", plural(controller_.runningCount(), "rank"), " on ",
                                plural(liveNodes(), "node")));
      return;
    case JobDecision::Action::Stop:
      if (!launched_) return;  // while connecting there is nothing to forward to: the medium reports it
      for (Node& node : nodes_) {
        if (!node.ended) node.channel->signal(decision.signal);
      }
      output_.line(true, strCat(received, "; forwarded it to ", plural(decision.ranks, "rank"), " on ",
                                plural(nodes_.size(), "node")));
      return;
    case JobDecision::Action::Kill:
      output_.line(true, received + " while stopping; sent SIGKILL to every rank");
      carryOut(decision);
      abandoned_ = true;  // end now: a silent host must not make the user wait
      return;
    case JobDecision::Action::Abandon:  // not produced: the nodes apply the kill wait to their ranks
    case JobDecision::Action::None: return;
  }
}

void RemoteJob::checkHang(Seconds now) {
  if (settings_.hangTimeout <= Seconds(0) || controller_.stopping() || !launched_ || collectingStacks_) return;
  std::vector<const Rank*> stuck;
  for (const auto& [id, r] : ranks_) {
    // Only ranks that report progress are judged: a script without the runtime never writes a step.
    if (controller_.running(r.slot) && r.step >= 0 && now - r.moved >= settings_.hangTimeout) stuck.push_back(&r);
  }
  if (stuck.empty()) return;
  std::vector<RankOnHost> running;
  for (const auto& [id, r] : ranks_) {
    if (controller_.running(r.slot) && r.pid > 0) running.push_back({r.rank, nodes_[r.node].host, r.pid});
  }
  std::vector<std::string> names;
  for (const Rank* r : stuck) names.push_back(strCat(r->rank, " (", nodes_[r->node].host, " step ", r->step, ")"));
  // Named when it is seen; recorded once the stacks are in (stopping first would kill what they show).
  collectingStacks_ = true;
  settings_.onHang(strCat("no progress for ", settings_.hangTimeout.count(), " s (--hang_timeout_s) by rank",
                          stuck.size() == 1 ? " " : "s ", join(names, ", "), "; stacks of every rank: "),
                   nodes_[stuck.front()->node].host, std::move(running));
}

void RemoteJob::exitTimeoutStopped() {
  std::vector<std::string> running;
  for (const auto& [id, r] : ranks_) {
    if (controller_.running(r.slot)) running.push_back(who(r));
  }
  output_.line(true, exitTimeoutLine(cleanExit_, settings_.stop.exitTimeoutS(), running));
}

std::optional<std::string> RemoteJob::spawnFailure() const {
  if (!perRank() || controller_.stopCause() != StopCause::SpawnFailure) return std::nullopt;
  return controller_.stopFailure()->what;
}

int RemoteJob::finishRanks() {
  if (controller_.stopCause() == StopCause::Failure && !settings_.elasticRound) {
    output_.line(true, rootCauseLine(controller_.failures(), controller_.terminated()));
    printRootCauseBlock();
  }
  facts_.signalled = controller_.firstSignal();
  facts_.exitCode = controller_.exitCode();
  if (controller_.stopCause() == StopCause::Failure) {
    // The earliest failure in time first: it is the round's cause; every lost host is named.
    const std::vector<TimedFailure>& failures = controller_.failures();
    const size_t first = earliestFailure(failures);
    const auto event = [](const TimedFailure& f) { return StopEvent{f.host, f.what, f.exitCode, f.hostLost}; };
    facts_.events.push_back(event(failures[first]));
    for (size_t i = 0; i < failures.size(); ++i) {
      if (i != first) facts_.events.push_back(event(failures[i]));
    }
  }
  outcome_ = roundOutcome(facts_);
  if (detectedAt_) outcome_.detectedAt = steadyTimeOf(*detectedAt_);
  return facts_.exitCode;
}

void RemoteJob::printRootCauseBlock() {
  const TimedFailure& first = controller_.failures()[earliestFailure(controller_.failures())];
  // A rank's failure is worded by who() + describeWaitStatus, the shape failure_line.h reads back.
  const std::optional<RankFailure> failure = first.hostLost ? std::nullopt : parseFailureLine("dsrun: " + first.what);
  if (!failure) return;
  RootCause cause;
  cause.program = settings_.program;
  cause.rank = failure->rank;
  cause.host = failure->host;
  cause.pid = failure->pid;
  cause.cause = failure->cause;
  cause.exitCode = failure->exitCode;
  if (auto it = ranks_.find(failure->rank); it != ranks_.end()) cause.stderrTail = it->second.tail;
  if (!settings_.eachRankLogDir.empty()) {
    // The node wrote it on its host (agent/rank_starter.cc names it as rankLogPath does).
    cause.logFile = strCat(rankLogPath(settings_.eachRankLogDir, settings_.logTag, failure->rank), " on ", failure->host);
  }
  for (const std::string& line : rootCauseBlock(cause)) output_.line(true, line);
}

std::string RemoteJob::who(const Rank& r) const {
  return strCat("rank ", r.rank, " (", nodes_[r.node].host, " pid ", r.pid, ")");
}

size_t RemoteJob::liveNodes() const {
  return static_cast<size_t>(std::count_if(nodes_.begin(), nodes_.end(), [](const Node& n) { return !n.ended; }));
}

}  // namespace dsrun::launcher
