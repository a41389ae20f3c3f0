#include "launcher/backends/agent/agent_job.h"

#include <boost/asio/post.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <sys/wait.h>

#include "common/env_contract.h"
#include "common/error.h"
#include "common/exit_status.h"
#include "common/exit_timeout_line.h"
#include "common/logging.h"
#include "supervision/rank_log.h"
#include "common/root_cause.h"
#include "supervision/signal_pipe.h"
#include "common/strings.h"
#include "launcher/backends/agent/stack_dump.h"
#include "launcher/failure_line.h"
#include "launcher/local_backend.h"
#include "proto/rank_env.h"

namespace dsrun {

namespace {

/// A waitpid()-style status from the agent's report, so exit_status.h's wording applies.
int waitStatusOf(const wire::RankExited& e) {
  return e.status_case() == wire::RankExited::kSignal ? (e.signal() & 0x7f) : ((e.exit_code() & 0xff) << 8);
}

std::string plural(size_t n, const char* word) { return strCat(n, " ", word, n == 1 ? "" : "s"); }

int64_t nowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// The agent backend's part of the job's policy: the agents apply the grace; the user's first signal
/// still reaches the ranks as itself while a failure stops them, the second kills; a rank killed by
/// our stop decides the exit code only when nothing failed on its own.
JobControllerOptions controllerOptions(const StopTimes& stop) {
  JobControllerOptions options;
  options.killGraceS = std::nullopt;
  options.exitTimeoutS = stop.exitTimeoutS();
  options.whileStopping = SignalWhileStopping::KillOnSecondSignal;
  options.stopCausedExitIsFailure = false;
  return options;
}

/// How long the kill requests of a second Ctrl-C may take to leave before dsrun exits anyway.
constexpr auto kAbandonFlush = std::chrono::milliseconds(1000);
/// How long the agents may take to answer with a hung rank's stacks (eu-stack or gdb on a big process).
constexpr auto kStackTimeout = std::chrono::milliseconds(5000);
/// How often the final output flush looks at signals while the reader of dsrun's output is slow.
constexpr auto kFlushPoll = std::chrono::milliseconds(50);

}  // namespace

AgentJob::AgentJob(const WorldPlan& plan, boost::asio::ssl::context& ssl, Settings settings, int outFd, int errFd)
    : plan_(plan),
      ssl_(ssl),
      settings_(std::move(settings)),
      stop_(settings_.launch.stop),
      writer_(outFd, errFd,
              [this](uint64_t node, size_t bytes) {
                // The writer's thread: hand the credit to the loop, which owns the connections.
                boost::asio::post(io_, [this, node, bytes] { onWritten(node, bytes); });
              }),
      signals_(io_),
      heartbeat_(io_),
      exitTimer_(io_),
      controller_(plan.ranks.size(), controllerOptions(stop_)) {
  for (size_t i = 0; i < plan_.hosts.size(); ++i) {
    auto node = std::make_unique<Node>();
    node->host = plan_.hosts[i].host;
    node->nodeRank = static_cast<int>(i);
    for (const PlannedRank* r : plan_.ranksOnNode(node->nodeRank)) {
      node->ranks.push_back(r->rank);
      RankState& state = ranks_[r->rank];
      state.rank = r->rank;
      state.host = r->host;
      if (settings_.launch.tagOutput) state.prefix = strCat(r->host, ":", r->rank, " | ");
    }
    if (!node->ranks.empty()) nodes_.push_back(std::move(node));
  }
  DSRUN_CHECK_EQ(ranks_.size(), plan_.ranks.size(), "ranks on the plan's hosts");
  // Every rank counts as running from the start: a host lost before the launch loses its ranks.
  size_t slot = 0;
  for (auto& [rank, state] : ranks_) {
    state.slot = slot;
    controller_.rankStarted(slot++);
  }
}

int AgentJob::run() {
  // A dead reader of our stdout must not kill dsrun before it has stopped the ranks.
  std::signal(SIGPIPE, SIG_IGN);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) signals_.add(s);
  armSignals();
  connectAll();
  if (const std::optional<int> signal = controller_.firstSignal()) {
    for (auto& node : nodes_) node->client->close();
    notice(strCat("dsrun: received ", signalName(*signal), " while connecting to the agents; nothing was started"));
    writer_.waitIdle(kAbandonFlush);
    return 128 + *signal;
  }
  std::vector<std::string> failures;
  for (auto& node : nodes_) {
    if (!node->ready) failures.push_back(node->error);
  }
  if (!failures.empty() && settings_.elasticRound) {
    for (auto& node : nodes_) node->client->close();
    outcome_.end = Outcome::End::Unreachable;
    outcome_.exitCode = 1;
    outcome_.unreachable = failures;
    for (auto& node : nodes_) {
      if (!node->ready) outcome_.lostHosts.push_back(node->host);
    }
    outcome_.detectedAt = std::chrono::steady_clock::now();
    return outcome_.exitCode;
  }
  if (!failures.empty()) {
    for (auto& node : nodes_) node->client->close();
    // An agent that answered with a version mismatch runs: its own hint (the same release everywhere) is the one.
    const bool answered = std::any_of(failures.begin(), failures.end(), [](const std::string& f) {
      return f.find("protocol version mismatch") != std::string::npos;
    });
    throw Error(strCat("cannot start the job, nothing was started: ", join(failures, "; "),
                       answered ? std::string()
                                : strCat("\n  hint: start 'dsrun-agent --listen ADDR:", settings_.port,
                                         " --tls_dir NODEDIR' on every host, NODEDIR made for it by 'dsrun "
                                         "--make_node_cert' from --tls_dir")));
  }
  // A launch's MASTER_PORT was checked before it was planned (AgentBackend::prepareLaunch); an elastic world
  // has a new first host each time and checks it here.
  if (settings_.elasticRound) {
    if (const std::optional<int> stopped = preflightMasterPort()) return *stopped;
  }
  if (settings_.meshProbe && nodes_.size() > 1) {
    if (const std::optional<int> stopped = probeMesh()) return *stopped;
  }
  launchAll();
  armHeartbeat();
  while (!finished() && !abandoned_ && io_.run_one() > 0) {
  }
  return finish();
}

int AgentJob::finish() {
  heartbeat_.cancel();
  exitTimer_.cancel();
  if (abandoned_) {
    // A second Ctrl-C: the SIGKILL requests are queued; give them a moment to leave, then go.
    const auto until = std::chrono::steady_clock::now() + kAbandonFlush;
    auto sent = [this] {
      return std::all_of(nodes_.begin(), nodes_.end(),
                         [](const auto& n) { return n->done || n->client->sendQueueEmpty(); });
    };
    while (!sent() && std::chrono::steady_clock::now() < until) io_.run_one_for(kFlushPoll);
    // What is written by then (our own notices first) reaches the reader; a stalled reader loses the rest.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    writer_.waitIdle(std::max(left, std::chrono::milliseconds(0)));
    writer_.abandon();
  }
  for (auto& node : nodes_) node->client->close();
  if (controller_.stopCause() == StopCause::Failure && !settings_.elasticRound) {
    notice(rootCauseLine(controller_.failures(), controller_.terminated()));
    printRootCauseBlock();
  }
  // Everything the ranks wrote reaches the reader, however slow; a signal meanwhile ends the wait.
  while (!abandoned_ && !writer_.waitIdle(kFlushPoll)) io_.poll();
  signals_.cancel();
  io_.poll();  // let cancelled handlers release the clients
  if (controller_.stopCause() == StopCause::SpawnFailure) throw Error(controller_.stopFailure()->what);
  outcome_.exitCode = controller_.exitCode();
  recordOutcome();
  return outcome_.exitCode;
}

void AgentJob::printRootCauseBlock() {
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
  if (!settings_.launch.eachRankLogDir.empty()) {
    // The agent wrote it on its host (agent/rank_starter.cc names it as rankLogPath does).
    cause.logFile = strCat(rankLogPath(settings_.launch.eachRankLogDir, settings_.logTag, failure->rank), " on ",
                           failure->host);
  }
  for (const std::string& line : rootCauseBlock(cause)) notice(line);
}

void AgentJob::recordOutcome() {
  using End = Outcome::End;
  const std::vector<TimedFailure>& failures = controller_.failures();
  if (controller_.firstSignal()) {
    outcome_.end = End::Signalled;
  } else if (controller_.stopCause() == StopCause::Failure) {
    outcome_.end = End::Failed;
    const TimedFailure& first = failures[earliestFailure(failures)];
    outcome_.cause = first.what;
    auto add = [](std::vector<std::string>& list, const std::string& host) {
      if (std::find(list.begin(), list.end(), host) == list.end()) list.push_back(host);
    };
    add(outcome_.failedHosts, first.host);
    for (const TimedFailure& f : failures) {
      if (f.hostLost) add(outcome_.lostHosts, f.host);
    }
  } else if (rescaling_) {
    outcome_.end = End::Rescaled;
  } else {
    outcome_.end = outcome_.exitCode == 0 ? End::Completed : End::Failed;
  }
}

void AgentJob::connectAll() {
  for (auto& nodePtr : nodes_) {
    Node* node = nodePtr.get();
    AgentClient::Callbacks cb;
    cb.onReady = [this, node](const wire::Welcome& w) {
      node->ready = true;
      node->heartbeatMs = std::max<uint32_t>(w.heartbeat_period_ms(), 20);
      node->address = w.host_address();
      DSRUN_LOG(DEBUG) << "agent " << node->client->address() << " (" << w.agent_host() << ") ready";
    };
    cb.onRankStarted = [this](const wire::RankStarted& s) {
      auto it = ranks_.find(s.rank());
      if (it == ranks_.end()) return;
      it->second.pid = s.pid();
      if (++startedRanks_ == ranks_.size() && settings_.onAllRanksStarted) {
        const std::string line = settings_.onAllRanksStarted();
        if (!line.empty()) notice(line);
      }
    };
    const size_t nodeIndex = static_cast<size_t>(&nodePtr - nodes_.data());
    cb.onOutput = [this, nodeIndex](const wire::OutputChunk& chunk) { onOutput(nodeIndex, chunk); };
    cb.onRankExited = [this, node](const wire::RankExited& e) { onRankExited(*node, e); };
    cb.onRankProgress = [this](const wire::RankProgress& p) {
      auto it = ranks_.find(p.rank());
      if (it == ranks_.end() || p.step() == it->second.step) return;
      it->second.step = p.step();
      it->second.moved = std::chrono::steady_clock::now();
    };
    cb.onError = [this, node](const wire::Error& e) {
      // A signal request can cross the last exit of that host's ranks: the agent has forgotten the job.
      if (startsWith(e.message(), "signal refused")) {
        DSRUN_LOG(DEBUG) << "agent " << node->client->address() << ": " << e.message();
        return;
      }
      onSpawnError(*node, e.message());
    };
    cb.onClosed = [this, node](const std::string& reason) {
      node->done = true;
      node->error = reason;
      if (node->ready) onNodeLost(*node, reason);
    };
    node->client = AgentClient::create(io_, ssl_, node->host, settings_.port, settings_.clientName, std::move(cb));
    // Our budget for this agent, sent along: its agent stops our ranks after the same silence of ours (we beat
    // at least every agentBeatMs, armHeartbeat), so a cut-off host's ranks stop when we give it up.
    node->client->setHello(settings_.outputWindowBytes, true, settings_.agentBeatMs,
                           settings_.agentBeatMs * static_cast<uint32_t>(settings_.silentBeats));
    // A backstop behind the heartbeat budget (which names the silent host first): TCP itself gives a dead
    // path up after twice that budget instead of retransmitting for minutes.
    node->client->setUserTimeout(2 * settings_.agentBeatMs * static_cast<unsigned int>(settings_.silentBeats));
    node->client->connect(settings_.connectTimeout);
  }
  auto allAnswered = [this] {
    return std::all_of(nodes_.begin(), nodes_.end(), [](const auto& n) { return n->ready || n->done; });
  };
  while (!allAnswered() && !controller_.firstSignal() && io_.run_one() > 0) {
  }
}

void AgentJob::launchAll() {
  launched_ = true;
  if (!settings_.launch.eachRankLogDir.empty() && !settings_.elasticRound) {
    // Said once at the start: with the output in files on the hosts, the terminal would otherwise stay silent.
    std::string pattern = rankLogPath(settings_.launch.eachRankLogDir, settings_.logTag, 0);
    pattern.replace(pattern.size() - std::string("0.log").size(), std::string::npos, "<RANK>.log");
    notice(strCat("dsrun: every rank writes its output to ", pattern, " on its host"));
  }
  for (auto& node : nodes_) {
    wire::Envelope e;
    auto* launch = e.mutable_launch();
    launch->set_job_id(plan_.jobId);
    // 0 would mean "the agent's default"; a grace of 0 asks for an immediate SIGKILL.
    launch->set_kill_grace_s(stop_.killGrace > Seconds(0) ? stop_.killGrace.count() : 1e-3);
    launch->mutable_log()->set_each_rank_log_dir(settings_.launch.eachRankLogDir);
    launch->mutable_log()->set_tag(settings_.logTag);
    // Four looks per timeout: a hang is noticed within a quarter of it.
    if (settings_.hangTimeoutS > 0) launch->set_progress_interval_s(std::min(1.0, settings_.hangTimeoutS / 4));
    for (const RankSpec& spec : rankSpecsForNode(plan_, node->nodeRank, {})) {
      auto* rank = launch->add_ranks();
      rank->set_rank(spec.rank);
      rank->set_local_rank(spec.localRank);
      for (const auto& word : spec.command.argv) rank->add_argv(word);
      for (const auto& [name, value] : spec.command.env) {
        // An elastic world's --master_port 0 is picked by its own pre-flight; every other value is the plan's.
        const bool pickedPort = name == kEnvMasterPort && settings_.elasticRound && plan_.masterPort == 0;
        proto::addEnv(*rank, name, pickedPort ? std::to_string(masterPort_) : value);
      }
      rank->set_cwd(settings_.cwd);
      for (int core : spec.cores) rank->add_cores(core);
    }
    node->client->send(e);
  }
}

void AgentJob::onRankExited(Node&, const wire::RankExited& e) {
  auto it = ranks_.find(e.rank());
  if (it == ranks_.end() || !controller_.running(it->second.slot)) return;
  RankState& r = it->second;
  r.pid = e.pid();
  flushOutput(r);
  const int status = waitStatusOf(e);
  std::string how = describeWaitStatus(status);
  if (!e.oom_evidence().empty()) {
    how += strCat(": out of memory (the kernel's OOM killer, per the ", e.oom_evidence(), " on ", r.host, ")");
  }
  if (!e.given_up_state().empty()) {
    // Alive 10 s after the agent's SIGKILL (state D): the agent gave it up so that the job can end.
    how = strCat("is still alive 10s after SIGKILL, in state ", e.given_up_state(), "; ", r.host,
                 "'s agent gave up on it");
    notice(strCat("dsrun: ", who(r), " ", how));
  }
  const JobDecision decision =
      controller_.onRankExit(r.slot, status, nowSeconds(), strCat(who(r), " ", how), r.host,
                             e.exit_time_unix_us() != 0 ? e.exit_time_unix_us() : nowUs());
  afterFailure(decision);
  if (decision.exitTimeoutArmed) firstClean_ = who(r);
  armExitTimer(decision);
}

void AgentJob::armExitTimer(const JobDecision& decision) {
  if (!decision.exitTimeoutArmed) return;
  exitTimer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(*stop_.exitTimeout));
  exitTimer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) onExitTimeout();
  });
}

void AgentJob::onSpawnError(Node& node, const std::string& message) {
  // The agent has already stopped that node's other ranks; they report their exits as usual.
  afterFailure(controller_.onSpawnFailed(
      TimedFailure{nowUs(), 1, strCat("agent ", node.client->address(), ": ", message), node.host}, nowSeconds()));
}

void AgentJob::onNodeLost(Node& node, const std::string& reason) {
  std::vector<std::string> lost;
  std::vector<size_t> slots;
  for (int rank : node.ranks) {
    RankState& r = ranks_[rank];
    if (!controller_.running(r.slot)) continue;
    flushOutput(r);
    lost.push_back(who(r));
    slots.push_back(r.slot);
  }
  if (lost.empty()) return;  // everything there had already finished
  // The host failed no later than when it was last heard from.
  const auto heard = node.client->lastHeardWall();
  const int64_t when = heard.time_since_epoch().count() != 0
                           ? std::chrono::duration_cast<std::chrono::microseconds>(heard.time_since_epoch()).count()
                           : nowUs();
  afterFailure(controller_.onHostLost(slots, TimedFailure{when, 1, strCat(reason, "; lost ", join(lost, ", ")), node.host},
                                      nowSeconds()));
}

void AgentJob::afterFailure(const JobDecision& decision) {
  // Only the first failure while the job runs stops it; the earliest in time is named at the end.
  if (decision.action != JobDecision::Action::Stop) return;
  outcome_.detectedAt = std::chrono::steady_clock::now();
  stopEverything(decision.signal);
}

size_t AgentJob::signalLiveNodes(int signal) {
  size_t nodes = 0;
  for (auto& node : nodes_) {
    if (!node->ready || node->done) continue;
    wire::Envelope e;
    e.mutable_signal()->set_job_id(plan_.jobId);
    e.mutable_signal()->set_signal(signal);
    node->client->send(e);
    ++nodes;
  }
  return nodes;
}

void AgentJob::stopEverything(int signal) {
  exitTimer_.cancel();
  signalLiveNodes(signal);
}

void AgentJob::onExitTimeout() {
  const std::optional<double> deadline = controller_.nextDeadline();
  if (!deadline) return;
  // The timer was set for this deadline: it has passed, whatever rounding the clock conversion did.
  for (const JobDecision& decision : controller_.onTime(std::max(nowSeconds(), *deadline))) {
    if (decision.action != JobDecision::Action::Stop) continue;
    std::vector<std::string> running;
    for (const auto& [id, r] : ranks_) {
      if (controller_.running(r.slot)) running.push_back(who(r));
    }
    stopEverything(decision.signal);
    notice(exitTimeoutLine(firstClean_, stop_.exitTimeoutS(), running));
  }
}

void AgentJob::armHeartbeat() {
  // Twice per agent period (one late beat never costs a miss), and at least once per agent beat so that a
  // silent host is noticed within a beat of its budget.
  uint32_t tick = 500;
  for (const auto& node : nodes_) {
    tick = std::min(tick, node->heartbeatMs / 2);
    if (node->client && node->client->agentBeatMs() > 0) tick = std::min(tick, node->client->agentBeatMs());
  }
  heartbeat_.expires_after(std::chrono::milliseconds(std::max<uint32_t>(tick, 10)));
  heartbeat_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    checkSilentAgents();
    checkHang();
    if (settings_.elasticRound && !controller_.stopping() && settings_.rescaleWanted && settings_.rescaleWanted()) {
      rescaling_ = true;
      outcome_.detectedAt = std::chrono::steady_clock::now();
      const JobDecision decision = controller_.requestStop(SIGTERM, nowSeconds());
      stopEverything(decision.signal);
    }
    wire::Envelope beat;
    beat.mutable_heartbeat();
    for (auto& node : nodes_) {
      if (node->ready && !node->done) node->client->send(beat);
    }
    armHeartbeat();
  });
}

void AgentJob::checkSilentAgents() {
  const auto now = std::chrono::steady_clock::now();
  for (auto& node : nodes_) {
    if (!node->ready || node->done || !node->client->agentHeartbeats()) continue;
    const auto budget = silenceBudget(*node);
    const auto silent = now - node->client->lastHeard();
    if (silent < budget) continue;
    // Packets dropped, no reset: TCP alone would wait for minutes. The agent there stops its own
    // ranks once our heartbeats stop reaching it.
    const std::string reason = strCat("agent ", node->client->address(), ": host ", node->host, " silent for ",
                                      std::chrono::duration_cast<std::chrono::milliseconds>(silent).count(),
                                      " ms (heartbeat budget ", budget.count(), " ms; network down or host hung)");
    node->client->close();
    node->done = true;
    node->error = reason;
    onNodeLost(*node, reason);
  }
}

void AgentJob::checkHang() {
  if (settings_.hangTimeoutS <= 0 || controller_.stopping() || !launched_ || collectingStacks_) return;
  const auto now = std::chrono::steady_clock::now();
  const auto limit = std::chrono::duration<double>(settings_.hangTimeoutS);
  std::vector<const RankState*> stuck;
  for (const auto& [id, r] : ranks_) {
    // Only ranks that report progress are judged: a script without the runtime never writes a step.
    if (controller_.running(r.slot) && r.step >= 0 && now - r.moved >= limit) stuck.push_back(&r);
  }
  if (stuck.empty()) return;
  std::vector<StackTarget> targets;
  for (const auto& [id, r] : ranks_) {
    if (controller_.running(r.slot) && r.pid > 0) targets.push_back({r.host, r.rank, r.pid});
  }
  std::vector<std::string> names;
  for (const RankState* r : stuck) names.push_back(strCat(r->rank, " (", r->host, " step ", r->step, ")"));
  // Named when it is seen; recorded once the stacks are in (stopping first would kill what they show), with
  // the time it was seen, so a failure that arrives meanwhile does not pass for the earlier one.
  TimedFailure hang{nowUs(), 1,
                    strCat("no progress for ", settings_.hangTimeoutS, " s (--hang_timeout_s) by rank",
                           stuck.size() == 1 ? " " : "s ", join(names, ", "), "; stacks of every rank: "),
                    stuck.front()->host};
  const std::string dir = strCat(settings_.hangDir.empty() ? settings_.cwd : settings_.hangDir, "/dsrun-hang-", plan_.jobId);
  collectingStacks_ = true;
  collectStacks(io_, ssl_, settings_.port, settings_.clientName, plan_.jobId, targets, kStackTimeout,
                [this, hang = std::move(hang), dir](RankStacks stacks) mutable {
                  std::string where = dir;
                  try {
                    writeStackFiles(dir, stacks);
                  } catch (const Error& e) {
                    where = strCat("not written: ", e.what());
                  }
                  hang.what += where;
                  afterFailure(controller_.onFailure(std::move(hang), nowSeconds()));
                });
}

std::chrono::milliseconds AgentJob::silenceBudget(const Node& node) const {
  const uint32_t beat = node.client->agentBeatMs();
  if (beat == 0) return std::chrono::milliseconds(node.heartbeatMs) * settings_.silentPeriods;
  return std::chrono::milliseconds(beat) * settings_.silentBeats;
}

void AgentJob::armSignals() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    noteStopSignal(signal);
    const JobDecision decision = controller_.onSignal(signal, nowSeconds());
    switch (decision.action) {
      case JobDecision::Action::Forward:
        forwardSignal(signal);  // SIGUSR1/SIGUSR2 (a preemption warning): the ranks decide what to do
        break;
      case JobDecision::Action::Stop:
        if (launched_) {  // while connecting there is nothing to forward to: run() reports it
          stopEverything(decision.signal);
          notice(strCat("dsrun: received ", signalName(signal), "; forwarded it to ", plural(decision.ranks, "rank"),
                        " on ", plural(nodes_.size(), "node")));
        }
        break;
      case JobDecision::Action::Kill:
        notice(strCat("dsrun: received ", signalName(signal), " while stopping; sent SIGKILL to every rank"));
        stopEverything(SIGKILL);
        abandoned_ = true;  // end now: a silent host must not make the user wait
        break;
      case JobDecision::Action::Abandon:  // not produced: the agents apply the kill wait to their ranks
      case JobDecision::Action::None: break;
    }
    armSignals();
  });
}

void AgentJob::forwardSignal(int signal) {
  if (!launched_) {
    notice(strCat("dsrun: received ", signalName(signal), " before any rank started; not forwarded"));
    return;
  }
  const size_t nodes = signalLiveNodes(signal);
  notice(strCat("dsrun: received ", signalName(signal), "; forwarded it to ", plural(runningRanks(), "rank"), " on ",
                plural(nodes, "node")));
}

void AgentJob::onOutput(size_t nodeIndex, const wire::OutputChunk& chunk) {
  auto it = ranks_.find(chunk.rank());
  const size_t credit = chunk.data().size();
  if (it == ranks_.end()) {
    onWritten(nodeIndex, credit);
    return;
  }
  RankState& r = it->second;
  std::string text;
  const bool isStderr = chunk.stream() == wire::STDERR;
  (isStderr ? r.err : r.out).feed(chunk.data(), [&](std::string_view line) {
    text.append(r.prefix).append(line).push_back('\n');
    if (isStderr) keepTailLine(r.tail, line);
  });
  // The credit goes back once the writer has written these lines (a partial line is held by the
  // bounded LineBuffer and credited now, with the lines before it).
  writer_.write(chunk.stream() == wire::STDERR ? OutputWriter::Stream::Err : OutputWriter::Stream::Out,
                std::move(text), nodeIndex, credit);
}

void AgentJob::onWritten(size_t nodeIndex, size_t bytes) {
  if (nodeIndex >= nodes_.size()) return;
  Node& node = *nodes_[nodeIndex];
  node.uncredited += bytes;
  // Batched: one OutputCredit per quarter window keeps the agent streaming without a message per chunk.
  if (node.uncredited >= settings_.outputWindowBytes / 4 && node.ready && !node.done) {
    node.client->sendCredit(node.uncredited);
    node.uncredited = 0;
  }
}

void AgentJob::notice(const std::string& line) { writer_.write(OutputWriter::Stream::Err, line + "\n"); }

void AgentJob::flushOutput(RankState& r) {
  std::string out, err;
  r.out.finish([&](std::string_view line) { out.append(r.prefix).append(line).push_back('\n'); });
  r.err.finish([&](std::string_view line) {
    err.append(r.prefix).append(line).push_back('\n');
    keepTailLine(r.tail, line);
  });
  if (!out.empty()) writer_.write(OutputWriter::Stream::Out, std::move(out));
  if (!err.empty()) writer_.write(OutputWriter::Stream::Err, std::move(err));
}

std::string AgentJob::who(const RankState& r) const { return strCat("rank ", r.rank, " (", r.host, " pid ", r.pid, ")"); }

size_t AgentJob::runningRanks() const { return controller_.runningCount(); }

bool AgentJob::finished() const { return runningRanks() == 0; }

}  // namespace dsrun
