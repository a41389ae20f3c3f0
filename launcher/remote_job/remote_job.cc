#include "launcher/remote_job/remote_job.h"

#include <algorithm>
#include <csignal>

#include "common/error.h"
#include "common/exit_timeout_line.h"
#include "common/strings.h"

namespace dsrun::launcher {

namespace {

/// The remote media's part of the stop policy: the nodes apply the grace themselves, so the controller's
/// grace is the point where they are killed; once stopping, failure lines are not judged (a rank dying of
/// the stop prints one too).
JobControllerOptions controllerOptions(const RemoteJobSettings& settings) {
  JobControllerOptions options;
  if (!settings.nodeRanks.empty()) {
    // Per rank (the agent): the nodes apply the grace and report every rank's end, so nothing is killed by
    // the clock; the user's Ctrl-C still reaches the ranks while a failure stops them, the second one kills;
    // a rank killed by the stop decides the code only when nothing failed on its own; failures while stopping
    // are kept as the root cause's consequences.
    options.killGraceS = std::nullopt;
    options.exitTimeoutS = settings.stop.exitTimeoutS();
    options.whileStopping = SignalWhileStopping::KillOnSecondSignal;
    options.stopCausedExitIsFailure = false;
    return options;
  }
  if (settings.nodeKillWait) options.killGraceS = (settings.stop.killGrace + *settings.nodeKillWait).count();
  else options.killGraceS = std::nullopt;
  options.exitTimeoutS = settings.stop.exitTimeoutS();
  options.whileStopping = settings.whileStopping;
  options.recordFailuresWhileStopping = false;
  return options;
}

size_t slotCount(const RemoteJobSettings& settings, size_t nodes) {
  if (settings.nodeRanks.empty()) return nodes;
  size_t ranks = 0;
  for (const std::vector<int>& r : settings.nodeRanks) ranks += r.size();
  return ranks;
}

}  // namespace

std::chrono::steady_clock::time_point steadyTimeOf(Seconds now) {
  return std::chrono::steady_clock::time_point(std::chrono::duration_cast<std::chrono::steady_clock::duration>(now));
}

Seconds steadyNow() { return std::chrono::steady_clock::now().time_since_epoch(); }

int64_t wallClockUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

RemoteJob::RemoteJob(std::vector<std::string> hosts, std::vector<NodeChannel*> channels, RemoteJobSettings settings,
                     LineSink& out, LineSink& err)
    : RemoteJob(std::move(hosts), std::move(channels), std::move(settings), std::make_unique<SinkOutput>(out, err)) {}

RemoteJob::RemoteJob(std::vector<std::string> hosts, std::vector<NodeChannel*> channels, RemoteJobSettings settings,
                     JobOutput& output)
    : RemoteJob(std::move(hosts), std::move(channels), std::move(settings), nullptr, &output) {}

RemoteJob::RemoteJob(std::vector<std::string> hosts, std::vector<NodeChannel*> channels, RemoteJobSettings settings,
                     std::unique_ptr<JobOutput> ownOutput, JobOutput* output)
    : settings_(std::move(settings)),
      ownOutput_(std::move(ownOutput)),
      output_(output != nullptr ? *output : *ownOutput_),
      controller_(slotCount(settings_, hosts.size()), controllerOptions(settings_)) {
  DSRUN_CHECK_EQ(hosts.size(), channels.size(), "one channel per host");
  for (size_t i = 0; i < hosts.size(); ++i) {
    Node node;
    node.host = std::move(hosts[i]);
    node.channel = channels[i];
    nodes_.push_back(std::move(node));
  }
  if (!perRank()) {
    for (size_t i = 0; i < nodes_.size(); ++i) controller_.rankStarted(i);  // a node lost before its start loses them
    return;
  }
  DSRUN_CHECK_EQ(settings_.nodeRanks.size(), nodes_.size(), "the ranks of every node");
  for (size_t i = 0; i < nodes_.size(); ++i) {
    for (int rank : settings_.nodeRanks[i]) {
      // Ranks come in ascending order, host by host: each goes in at the end (80,000 of them at 10,000 hosts).
      Rank& r = ranks_.emplace_hint(ranks_.end(), rank, Rank{})->second;
      r.rank = rank;
      r.node = i;
    }
  }
  // Slots in rank order; every rank counts as running from the start: a node lost before the launch loses them.
  size_t slot = 0;
  for (auto& [rank, r] : ranks_) {
    r.slot = slot;
    controller_.rankStarted(slot++);
  }
}

void RemoteJob::start(Seconds now) {
  launched_ = true;
  if (settings_.heartbeat > Seconds(0)) nextBeat_ = now + settings_.heartbeat;
  std::vector<std::pair<size_t, std::string>> failed;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (std::optional<std::string> error = nodes_[i].channel->start()) failed.emplace_back(i, std::move(*error));
  }
  for (const auto& [node, error] : failed) onLost(node, error, now);
}

void RemoteJob::onStarted(size_t node) {
  DSRUN_CHECK(node < nodes_.size(), "node ", node, " of ", nodes_.size());
  if (++started_ != nodes_.size() || !settings_.hooks.onAllRanksStarted) return;
  const std::string notice = settings_.hooks.onAllRanksStarted();
  if (!notice.empty()) output_.line(true, notice);
}

void RemoteJob::onOutput(size_t node, bool isStderr, std::string_view line, Seconds now) {
  // A node's root-cause lines arrive after the stop; the closing block quotes them instead.
  if (rootCauses_.take(line)) return;
  output_.line(isStderr, line);
  if (controller_.stopping()) return;  // ranks dying of a stop are not failures
  if (std::optional<RankFailure> f = parseFailureLine(line)) {
    const JobDecision decision = controller_.onFailure(
        TimedFailure{secondsToMicros(now.count()), f->exitCode, describeFailure(*f), f->host}, now.count());
    if (decision.action != JobDecision::Action::Stop) return;
    failure_ = f;
    addEvent({nodes_[node].host, describeFailure(*f), f->exitCode, false}, now);
    carryOut(decision);
    return;
  }
  if (!settings_.stop.exitTimeout) return;
  if (std::optional<RankFailure> clean = parseCleanExitLine(line)) {
    cleanRanks_.push_back(clean->rank);
    // Job-wide: the first clean exit on any node starts every node's clock.
    if (controller_.onCleanExit(now.count()).exitTimeoutArmed) cleanExit_ = strCat("rank ", clean->rank, " on ", clean->host);
  }
}

void RemoteJob::onExited(size_t node, int exitCode, const std::string& what, Seconds now) {
  ended(node, exitCode, what, false, now);
}

void RemoteJob::onLost(size_t node, const std::string& cause, Seconds now) {
  DSRUN_CHECK(!perRank(), "a per-rank medium reports a lost node with onLostAt");
  ended(node, std::nullopt, cause, true, now);
}

void RemoteJob::ended(size_t index, std::optional<int> exitCode, const std::string& what, bool lost, Seconds now) {
  DSRUN_CHECK(index < nodes_.size(), "node ", index, " of ", nodes_.size());
  Node& node = nodes_[index];
  if (node.ended) return;
  node.ended = true;
  node.exitCode = exitCode;
  node.what = what;
  controller_.onRankGone(index, now.count());
  const bool failed = !exitCode || *exitCode != 0;
  if (settings_.elasticRound && lost) {
    addEvent({node.host, what, 255, true}, now);  // a lost host is named even when the job was stopping
  } else if (settings_.elasticRound && failed && !controller_.stopping()) {
    addEvent({node.host, what, *exitCode, false}, now);
  }
  // The node's own failure (no failure line before it, or a lost host) stops the others, if any still run
  // (the command medium's one node: its trailing lines are still judged after it ended).
  if (failed && !controller_.stopping() && !done()) carryOut(controller_.requestStop(SIGTERM, now.count()));
}

void RemoteJob::onSignal(int signal, Seconds now) {
  // Every signal goes to every node as itself; dsrun-launch acts on it as on the signal (a first stop signal
  // stops its ranks with it, a second kills them, USR1/USR2 pass through), so the ranks see what dsrun saw.
  // The controller starts the stop's clock, remembers the first stop signal and says when a medium kills.
  const JobDecision decision = controller_.onSignal(signal, now.count());
  if (perRank()) {
    onRankSignal(signal, decision);
    return noteStop(now);
  }
  if (decision.action == JobDecision::Action::Kill) return carryOut(decision);
  for (Node& node : nodes_) {
    if (!node.ended) node.channel->signal(signal);
  }
}

void RemoteJob::onTime(Seconds now) {
  // Per rank the beats go on while stopping: the agents wait for their ranks' ends as long as we are heard.
  if (nextBeat_ && now >= *nextBeat_ && (perRank() || !controller_.stopping())) {
    nextBeat_ = now + settings_.heartbeat;
    for (Node& node : nodes_) {
      if (!node.ended) node.channel->heartbeat();
    }
    if (perRank()) checkHang(now);
    if (settings_.elasticRound && !controller_.stopping() && settings_.hooks.rescaleWanted &&
        settings_.hooks.rescaleWanted()) {
      detected(now);
      facts_.rescaled = true;
      carryOut(controller_.requestStop(SIGTERM, now.count()));
    }
  }
  for (const JobDecision& decision : controller_.onTime(now.count())) {
    if (decision.action == JobDecision::Action::Stop) {
      if (perRank()) {
        carryOut(decision);
        exitTimeoutStopped();
        continue;
      }
      printExitTimeoutLine();
    }
    carryOut(decision);
  }
  noteStop(now);
  if (const std::optional<Seconds> deadline = reportDeadline(); deadline && now >= *deadline && !done()) {
    giveUpUnreported(now);
  }
}

void RemoteJob::printExitTimeoutLine() {
  std::vector<std::string> running;
  for (const auto& [rank, host] : settings_.rankHosts) {
    if (std::find(cleanRanks_.begin(), cleanRanks_.end(), rank) == cleanRanks_.end()) {
      running.push_back(strCat("rank ", rank, " on ", host));
    }
  }
  output_.line(true, exitTimeoutLine(cleanExit_, settings_.stop.exitTimeoutS(), running));
}

void RemoteJob::carryOut(const JobDecision& decision) {
  for (Node& node : nodes_) {
    if (node.ended) continue;
    switch (decision.action) {
      case JobDecision::Action::Stop: node.channel->stop(); break;
      case JobDecision::Action::Kill:
        if (std::optional<std::string> end = node.channel->kill()) {
          node.ended = true;  // closed with its channel: no end will be reported
          node.what = std::move(*end);
        }
        break;
      case JobDecision::Action::Forward:  // signals are passed on by onSignal
      case JobDecision::Action::Abandon:  // not produced: no kill wait of the controller's own
      case JobDecision::Action::None: break;
    }
  }
}

std::optional<Seconds> RemoteJob::nextDeadline() const {
  std::optional<Seconds> next;
  if (const std::optional<double> deadline = controller_.nextDeadline()) next = Seconds(*deadline);
  if (nextBeat_ && (perRank() || !controller_.stopping()) && (!next || *nextBeat_ < *next)) next = nextBeat_;
  if (const std::optional<Seconds> report = reportDeadline(); report && (!next || *report < *next)) next = report;
  return next;
}

bool RemoteJob::done() const {
  if (perRank()) return abandoned_ || controller_.runningCount() == 0;
  return std::all_of(nodes_.begin(), nodes_.end(), [](const Node& n) { return n.ended; });
}

void RemoteJob::detected(Seconds now) {
  if (!detectedAt_) detectedAt_ = now;
}

void RemoteJob::addEvent(StopEvent event, Seconds now) {
  if (!settings_.elasticRound) return;
  if (facts_.events.empty() && !facts_.rescaled) detected(now);
  facts_.events.push_back(std::move(event));
}

int RemoteJob::finish() {
  if (perRank()) return finishRanks();
  const std::optional<int> signalled = controller_.firstSignal();
  const int code = [&] {
    if (failure_) {
      if (!settings_.elasticRound) {
        output_.line(true, strCat("dsrun: ", describeFailure(*failure_), "; stopped the job on every host"));
        for (const std::string& line : rootCauses_.block(*failure_, settings_.program)) output_.line(true, line);
      }
      return failure_->exitCode;
    }
    if (signalled) return 128 + *signalled;
    if (controller_.stopCause() == StopCause::ExitTimeout) return 1;  // the ranks still running were cut short
    if (!facts_.events.empty()) return facts_.events.front().exitCode;
    if (facts_.rescaled) return 0;
    for (const Node& node : nodes_) {
      if (!node.ended || node.exitCode == 0) continue;
      if (!settings_.elasticRound) output_.line(true, strCat("dsrun: ", node.what));
      return node.exitCode.value_or(255);
    }
    return 0;
  }();
  facts_.signalled = signalled;
  facts_.exitCode = code;
  outcome_ = roundOutcome(facts_);
  if (detectedAt_) outcome_.detectedAt = steadyTimeOf(*detectedAt_);
  return code;
}

}  // namespace dsrun::launcher
