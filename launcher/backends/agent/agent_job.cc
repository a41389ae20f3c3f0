#include "launcher/backends/agent/agent_job.h"

#include <boost/asio/post.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <tuple>

#include "common/error.h"
#include "common/exit_status.h"
#include "common/logging.h"
#include "common/strings.h"
#include "launcher/backends/agent/agent_launch_request.h"
#include "launcher/backends/agent/agent_port_preflight.h"
#include "launcher/backends/agent/agent_tree_build.h"
#include "launcher/backends/agent/agent_tree_launch.h"
#include "launcher/backends/agent/agent_tree_plan.h"
#include "launcher/backends/agent/agent_tree_probe.h"
#include "launcher/backends/agent/stack_dump.h"
#include "proto/tree_launch_expander.h"
#include "supervision/rank_log.h"
#include "supervision/signal_pipe.h"
#include "tls/random_bytes.h"
#include "tls/tree_signature.h"

namespace dsrun::launcher {

namespace {

/// A waitpid()-style status from the agent's report, so exit_status.h's wording applies.
int waitStatusOf(const wire::RankExited& e) {
  return e.status_case() == wire::RankExited::kSignal ? (e.signal() & 0x7f) : ((e.exit_code() & 0xff) << 8);
}

/// How long the kill requests of a second Ctrl-C may take to leave before dsrun exits anyway.
constexpr auto kAbandonFlush = std::chrono::milliseconds(1000);
/// How long the agents may take to answer with a hung rank's stacks (eu-stack or gdb on a big process).
constexpr auto kStackTimeout = std::chrono::milliseconds(5000);
/// How often the final output flush looks at signals while the reader of dsrun's output is slow.
constexpr auto kFlushPoll = std::chrono::milliseconds(50);
/// How far a tree launch's issue time may be from an agent's clock, either way (and how long the agents
/// remember its job id against a replay): the launch's own lifetime, with room for skewed clocks.
constexpr uint32_t kTreeLaunchValidS = 300;

}  // namespace

/// The driver's lines go through the writer, behind the ranks' output already queued there.
class AgentJob::WriterOutput : public JobOutput {
 public:
  explicit WriterOutput(OutputWriter& writer) : writer_(writer) {}
  void line(bool isStderr, std::string_view text) override {
    writer_.write(isStderr ? OutputWriter::Stream::Err : OutputWriter::Stream::Out, strCat(text, "\n"));
  }

 private:
  OutputWriter& writer_;
};

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
      driverOutput_(std::make_unique<WriterOutput>(writer_)),
      signals_(io_),
      timer_(io_),
      // As often as the driver will beat (launchAll); from the first welcome on, so that an agent welcomed
      // early does not give us up while we connect to the others.
      prelaunchBeats_(io_, std::chrono::milliseconds(std::clamp<uint32_t>(settings_.agentBeatMs, 10, 500)), [this] {
        for (auto& node : nodes_) node->channel->heartbeat();  // only the welcomed and live ones beat
      }) {
  const std::vector<std::vector<const PlannedRank*>> ranksOfNode = ranksByNode(plan_);
  for (size_t i = 0; i < plan_.hosts.size(); ++i) {
    auto node = std::make_unique<Node>();
    node->host = plan_.hosts[i].host;
    node->nodeRank = static_cast<int>(i);
    node->channel = std::make_unique<AgentChannel>(plan_.jobId, AgentChannel::Silence{settings_.silentPeriods,
                                                                                      settings_.silentBeats});
    for (const PlannedRank* r : ranksOfNode[i]) {
      node->ranks.push_back(r->rank);
      // Ranks ascend, host by host: each goes in at the end (80,000 of them at 10,000 hosts).
      RankOutput& out =
          output_.emplace_hint(output_.end(), std::piecewise_construct, std::forward_as_tuple(r->rank), std::tuple<>())
              ->second;
      if (settings_.launch.tagOutput) out.prefix = strCat(r->host, ":", r->rank, " | ");
    }
    if (!node->ranks.empty()) nodes_.push_back(std::move(node));
  }
  DSRUN_CHECK_EQ(output_.size(), plan_.ranks.size(), "ranks on the plan's hosts");
  if (settings_.treeWidth > 0) {
    DSRUN_CHECK_EQ(nodes_.size(), plan_.hosts.size(), "a tree over hosts that all run ranks");
    tree_ = planAgentTree(nodes_.size(), settings_.treeWidth);
    subtreeEnd_ = tree_->subtreeEnd;
    for (int parent : tree_->parent) dialled_.push_back(parent < 0);
  } else {
    for (size_t i = 0; i < nodes_.size(); ++i) subtreeEnd_.push_back(i + 1);
    dialled_.assign(nodes_.size(), true);
  }
  std::vector<std::string> hosts;
  std::vector<NodeChannel*> channels;
  for (const auto& node : nodes_) {
    hosts.push_back(node->host);
    channels.push_back(node->channel.get());
  }
  job_ = std::make_unique<RemoteJob>(std::move(hosts), std::move(channels), driverSettings(), *driverOutput_);
}

AgentJob::~AgentJob() = default;

RemoteJobSettings AgentJob::driverSettings() {
  RemoteJobSettings s;
  s.stop = stop_;
  s.program = settings_.program;
  s.elasticRound = settings_.elasticRound;
  s.hooks = settings_.hooks;
  for (const auto& node : nodes_) s.nodeRanks.push_back(node->ranks);
  s.eachRankLogDir = settings_.launch.eachRankLogDir;
  s.logTag = settings_.logTag;
  s.hangTimeout = Seconds(std::max(settings_.hangTimeoutS, 0.0));
  // After the grace and the agents' own kill wait (nodeKillWait), a node lost during the stop is noticed by
  // its parent (or us) within one silence budget, and its children are re-attached within a connect timeout
  // (our adoptions' is the budget when longer, dial()) and a second budget; then every end has had its way up,
  // and the ranks still unreported are given up.
  s.reportSlack = 2 * silenceBudget() + std::max<std::chrono::milliseconds>(settings_.connectTimeout, silenceBudget());
  s.onHang = [this](const std::string& what, const std::string& host, std::vector<RankOnHost> running) {
    collectHungStacks(what, host, std::move(running));
  };
  return s;
}

int AgentJob::run() {
  // A dead reader of our stdout must not kill dsrun before it has stopped the ranks.
  std::signal(SIGPIPE, SIG_IGN);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) signals_.add(s);
  armSignals();
  prepareLaunches();
  prelaunchBeats_.start();
  connectAll();
  if (firstSignal() != 0) return nothingStarted("while connecting to the agents");
  std::vector<std::string> failures;
  std::vector<std::string> noTree;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!dialled_[i]) continue;
    if (!nodes_[i]->channel->ready()) failures.push_back(nodes_[i]->channel->error());
    else if (settings_.treeWidth > 0 && !nodes_[i]->client->agentServesTrees()) noTree.push_back(nodes_[i]->client->address());
  }
  if (failures.empty() && !noTree.empty()) {
    closeAll();
    throw ConfigError(strCat("--tree_width ", settings_.treeWidth, ": the agent", noTree.size() == 1 ? " " : "s ",
                             join(noTree, ", "), " cannot forward a tree launch (an older dsrun-agent); nothing "
                             "was started\n  hint: run the same dsrun release on every host, or drop --tree_width"));
  }
  if (!failures.empty() && settings_.elasticRound) {
    closeAll();
    std::vector<std::string> lost;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (dialled_[i] && !nodes_[i]->channel->ready()) lost.push_back(nodes_[i]->host);
    }
    return roundEndedUnstarted(Outcome::End::Unreachable, failures, std::move(lost));
  }
  if (!failures.empty()) {
    closeAll();
    // An agent that answered with a version mismatch runs: its own hint (the same release everywhere) is the one.
    const bool answered = std::any_of(failures.begin(), failures.end(), [](const std::string& f) {
      return f.find("protocol version mismatch") != std::string::npos;
    });
    throw Error(strCat("cannot start the job, nothing was started: ", join(failures, "; "),
                       answered ? std::string() : startAgentHint(settings_.port)));
  }
  if (treeBuild_) installTreeLaunches();
  // MASTER_PORT was checked before the plan was made: AgentBackend::prepareLaunch for a launch,
  // AgentElasticRounds::checkMasterPort for each elastic world.
  const bool probe = settings_.meshProbe && nodes_.size() > 1;
  // A tree below its roots is assembled, probed or not, before any rank starts; roots alone (one level) were
  // all welcomed above, as the star's hosts are, and need no such round.
  if (tree_ && (probe || tree_->levels() > 1)) {
    if (const std::optional<int> stopped = assembleTree(probe)) return *stopped;
  } else if (probe) {
    if (const std::optional<int> stopped = probeMesh()) return *stopped;
  }
  launchAll();
  while (!job_->done() && io_.run_one() > 0) armTimer();
  return finish();
}

void AgentJob::closeAll() {
  for (auto& node : nodes_) {
    if (node->client) node->client->close();
  }
}

int AgentJob::nothingStarted(const std::string& during) {
  closeAll();
  notice(strCat("dsrun: received ", signalName(firstSignal()), " ", during, "; nothing was started"));
  writer_.waitIdle(kAbandonFlush);
  outcome_.exitCode = 128 + firstSignal();
  return outcome_.exitCode;
}

int AgentJob::roundEndedUnstarted(Outcome::End end, std::vector<std::string> unreachable,
                                  std::vector<std::string> lostHosts) {
  outcome_.end = end;
  outcome_.exitCode = 1;
  outcome_.unreachable = std::move(unreachable);
  outcome_.lostHosts = std::move(lostHosts);
  outcome_.detectedAt = std::chrono::steady_clock::now();
  return outcome_.exitCode;
}

int AgentJob::finish() {
  timer_.cancel();
  if (job_->abandoned()) {
    // A second Ctrl-C: the SIGKILL requests are queued; give them a moment to leave, then go.
    const auto until = std::chrono::steady_clock::now() + kAbandonFlush;
    auto sent = [this] {
      return std::all_of(nodes_.begin(), nodes_.end(),
                         [](const auto& n) { return !n->channel->live() || n->client->sendQueueEmpty(); });  // live: dialled
    };
    while (!sent() && std::chrono::steady_clock::now() < until) io_.run_one_for(kFlushPoll);
    // What is written by then (our own notices first) reaches the reader; a stalled reader loses the rest.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    writer_.waitIdle(std::max(left, std::chrono::milliseconds(0)));
    writer_.abandon();
  }
  closeAll();
  const int code = job_->finish();  // the closing lines, queued behind the ranks' output
  // Everything the ranks wrote reaches the reader, however slow; a signal meanwhile ends the wait.
  while (!job_->abandoned() && !writer_.waitIdle(kFlushPoll)) io_.poll();
  signals_.cancel();
  io_.poll();  // let cancelled handlers release the clients
  if (const std::optional<std::string> error = job_->spawnFailure()) throw Error(*error);
  outcome_ = job_->outcome();
  if (tree_ && !outcome_.lostHosts.empty()) {
    // A lost node's subtree is lost with it, but its hosts answered: the next world re-forms without the lost
    // node alone.
    std::vector<bool> lost(nodes_.size(), false);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      lost[i] = std::find(outcome_.lostHosts.begin(), outcome_.lostHosts.end(), nodes_[i]->host) !=
                outcome_.lostHosts.end();
    }
    outcome_.lostHosts.clear();
    for (size_t i : tree_->lostThemselves(lost)) outcome_.lostHosts.push_back(nodes_[i]->host);
  }
  return code;
}

void AgentJob::connectAll() {
  for (size_t nodeIndex = 0; nodeIndex < nodes_.size(); ++nodeIndex) {
    if (dialled_[nodeIndex]) dial(nodeIndex, false);  // the others are reached through their parents
  }
  auto allAnswered = [this] {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (dialled_[i] && !nodes_[i]->channel->answered()) return false;
    }
    return true;
  };
  while (!allAnswered() && !job_->controller().firstSignal() && io_.run_one() > 0) {
  }
  pacer_.clear();  // a signal came first: the rest are never started
}

void AgentJob::dial(size_t nodeIndex, bool adoption) {
  {
    Node* node = nodes_[nodeIndex].get();
    AgentChannel* channel = node->channel.get();
    AgentClient::Callbacks cb;
    cb.onReady = [this, node, channel, adoption](const wire::Welcome& w) {
      channel->welcomed(w);
      DSRUN_LOG(DEBUG) << "agent " << node->client->address() << " (" << w.agent_host() << ") ready";
      if (adoption) {
        channel->start();  // the driver started the others long ago
      } else {
        pacer_.finished();
      }
    };
    cb.onRankStarted = [this](const wire::RankStarted& s) { job_->onRankStarted(s.rank(), s.pid()); };
    cb.onOutput = [this, nodeIndex](const wire::OutputChunk& chunk) { onOutput(nodeIndex, chunk); };
    cb.onRankExited = [this](const wire::RankExited& e) {
      flushOutput(e.rank());
      RankExit exit;
      exit.rank = e.rank();
      exit.pid = e.pid();
      exit.waitStatus = waitStatusOf(e);
      exit.oomEvidence = e.oom_evidence();
      exit.givenUpState = e.given_up_state();
      exit.whenUs = e.exit_time_unix_us() != 0 ? e.exit_time_unix_us() : wallClockUs();
      job_->onRankExited(exit, steadyNow());
    };
    cb.onRankProgress = [this](const wire::RankProgress& p) { job_->onRankProgress(p.rank(), p.step(), steadyNow()); };
    cb.onError = [this, node, nodeIndex](const wire::Error& e) {
      // A signal request can cross the last exit of that host's ranks: the agent has forgotten the job.
      if (startsWith(e.message(), "signal refused")) {
        DSRUN_LOG(DEBUG) << "agent " << node->client->address() << ": " << e.message();
        return;
      }
      // A root relays its subtree's errors, which do not say whose they are: name the subtree it speaks for.
      const size_t end = subtreeEnd_[nodeIndex];
      const std::string via = end - nodeIndex < 2 ? std::string()
                                                  : strCat(" (for its subtree, ", node->host, " to ",
                                                           nodes_[end - 1]->host, ", ", end - nodeIndex, " hosts)");
      const std::string what = strCat("agent ", node->client->address(), via, ": ", e.message());
      if (e.unstarted_ranks().empty()) return onRefused(nodeIndex, what);
      job_->onSpawnFailed(nodeIndex, what, wallClockUs(), steadyNow());
      // They report no exit: without this the job would wait for them forever.
      job_->onRanksNeverStarted({e.unstarted_ranks().begin(), e.unstarted_ranks().end()}, steadyNow());
    };
    cb.onClosed = [this, channel, nodeIndex, adoption](const std::string& reason) {
      const bool welcomed = channel->ready();
      channel->closed(reason);
      if (!welcomed && !adoption) {
        pacer_.finished();  // a connection that never came up: the job does not start (run())
        return;
      }
      if (assembling_) return onProbeLost(nodeIndex, reason);  // nothing started: no child to adopt
      onRootLost(nodeIndex, reason);
    };
    cb.onNodeLost = [this, nodeIndex](const wire::NodeLost& lost) { onTreeNodeLost(nodeIndex, lost); };
    cb.onTreeProbeReport = [this, nodeIndex](const wire::TreeProbeReport& r) { onTreeProbeReport(nodeIndex, r); };
    node->client = AgentClient::create(io_, ssl_, node->host, settings_.port, settings_.clientName, std::move(cb));
    channel->attach(node->client);
    // Our budget for this agent, sent along: its agent stops our ranks after the same silence of ours (we beat
    // at least every agentBeatMs, launchAll), so a cut-off host's ranks stop when we give it up.
    node->client->setHello(settings_.outputWindowBytes, true, settings_.agentBeatMs,
                           static_cast<uint32_t>(silenceBudget().count()));
    // A tree's roots then pass their subtree's starts and clean exits up in a few packed messages, not one
    // per rank (RanksStarted, RanksExited): dsrun's CPU per rank was most of its CPU at thousands of nodes.
    node->client->setMergedRankEvents(true);
    // A backstop behind the heartbeat budget (which names the silent host first): TCP itself gives a dead
    // path up after twice that budget instead of retransmitting for minutes.
    node->client->setUserTimeout(static_cast<unsigned int>(2 * silenceBudget().count()));
    // Paced (connect_pacer.h): an agent's handshake deadline runs from our TCP connect, so a connection
    // waits its turn here, on no one's clock, instead of on the agent's.
    if (adoption) {
      // A few at a time: nothing to pace. Given the job's silence budget when longer, as a parent agent gives its
      // children (Session::childTiming): an adoption happens under the load that lost the root.
      node->client->connect(std::max<std::chrono::milliseconds>(settings_.connectTimeout, silenceBudget()));
    } else {
      pacer_.add([client = node->client, timeout = settings_.connectTimeout] { client->connect(timeout); });
    }
  }
}

void AgentJob::onRootLost(size_t nodeIndex, const std::string& reason) {
  if (tree_ && !launched_) {
    // Lost between its Welcome and the launch: nothing below it was started, and nothing will be.
    for (size_t i = nodeIndex; i < subtreeEnd_[nodeIndex]; ++i) onNodeLost(i, reason);
    return;
  }
  // Its children are attached first: the driver's answer to the loss (a stop) must reach their ranks too.
  adoptChildren(nodeIndex);
  onNodeLost(nodeIndex, reason);
}

void AgentJob::adoptChildren(size_t nodeIndex) {
  if (!tree_ || job_->done()) return;
  // A root's own signed launch (after a probe its channel's launch is the TreeGo), or what adopted it.
  const auto root = rootLaunches_.find(nodeIndex);
  const wire::Envelope& sent = root != rootLaunches_.end() ? root->second : nodes_[nodeIndex]->channel->launch();
  const wire::TreeLaunch& launch = sent.has_tree_adopt() ? sent.tree_adopt().launch() : sent.tree_launch();
  std::vector<proto::ChildTreeLaunch> children;
  try {
    const proto::Sha256 sha = [](std::string_view data) { return tls::sha256(data); };
    children = proto::childTreeLaunches(launch, proto::readTreeLaunch(launch, sha));
  } catch (const Error& e) {
    DSRUN_CHECK(false, "dsrun cannot read the tree launch it signed: ", e.what());
  }
  for (auto& child : children) {
    const auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& n) { return n->host == child.host; });
    DSRUN_CHECK(it != nodes_.end(), "a tree child '", child.host, "' that is not in the plan");
    const size_t index = static_cast<size_t>(it - nodes_.begin());
    DSRUN_LOG(DEBUG) << "adopting " << child.host << " (child of the lost " << nodes_[nodeIndex]->host << ")";
    wire::Envelope adopt;
    *adopt.mutable_tree_adopt()->mutable_launch() = std::move(child.launch);
    nodes_[index]->channel->setLaunch(std::move(adopt));
    dialled_[index] = true;
    dial(index, true);
  }
}

void AgentJob::prepareLaunches() {
  NodeLaunchSettings launch;
  launch.killGraceS = stop_.killGrace.count();
  launch.eachRankLogDir = settings_.launch.eachRankLogDir;
  launch.logTag = settings_.logTag;
  launch.hangTimeoutS = settings_.hangTimeoutS;
  launch.cwd = settings_.cwd;
  // --rendezvous agent: the agent of rank 0's node holds the job's keys (docs/rendezvous.md).
  const size_t storeRoot = plan_.ranks.empty() ? 0 : static_cast<size_t>(plan_.ranks.front().nodeRank);
  if (settings_.agentRendezvous) {
    wire::StoreRendezvous rendezvous;
    rendezvous.set_root_host(plan_.hosts.at(storeRoot).host);
    rendezvous.set_root_address(plan_.hosts.at(storeRoot).host);
    rendezvous.set_root_port(static_cast<uint32_t>(settings_.port));
    rendezvous.set_scope(tls::randomBytes(16));  // per launch: agents refuse other jobs' store traffic
    launch.rendezvous = rendezvous;
  }
  if (tree_) {
    // Built while the roots are dialled (connectAll), installed once they answered (installTreeLaunches).
    const proto::TreeLaunchStamp stamp{wallClockUs(), kTreeLaunchValidS, static_cast<uint32_t>(settings_.treeWidth),
                                       settings_.clientName};
    treeBuild_ = std::make_unique<TreeLaunchBuild>(plan_, *tree_, settings_.port, launch, settings_.tlsDir, stamp,
                                                   settings_.meshProbe && nodes_.size() > 1);
    return;
  }
  std::vector<wire::LaunchRequest> requests = nodeLaunchRequests(plan_, launch);
  if (settings_.agentRendezvous) requests.at(storeRoot).mutable_rendezvous()->set_root(true);
  for (auto& node : nodes_) {
    wire::Envelope e;
    *e.mutable_launch() = std::move(requests.at(static_cast<size_t>(node->nodeRank)));
    node->channel->setLaunch(std::move(e));
  }
}

void AgentJob::installTreeLaunches() {
  std::vector<RootTreeLaunch> roots;
  try {
    roots = treeBuild_->take();
  } catch (...) {
    closeAll();  // dialled while it was built: nothing was sent
    throw;
  }
  treeBuild_.reset();
  for (RootTreeLaunch& root : roots) {
    wire::Envelope e;
    *e.mutable_tree_launch() = std::move(root.launch);
    rootLaunches_[root.node] = e;
    nodes_.at(root.node)->channel->setLaunch(std::move(e));
  }
}

void AgentJob::onTreeNodeLost(size_t rootIndex, const wire::NodeLost& lost) {
  if (lost.job_id() != plan_.jobId) return;
  const auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& n) { return n->host == lost.host(); });
  if (it == nodes_.end()) return;
  const size_t index = static_cast<size_t>(it - nodes_.begin());
  const std::string reason = strCat("agent ", lost.host(), " (via ", nodes_[rootIndex]->host, "): ", lost.cause());
  if (assembling_) return onProbeLost(index, reason);  // its subtree was never launched: the host alone is named
  // Only that node: its parent adopts its children (agent/tree_relay.h), and reports any it cannot reach on
  // its own, so every other host of its subtree is still supervised.
  onNodeLost(index, reason);
}

void AgentJob::launchAll() {
  if (!settings_.launch.eachRankLogDir.empty() && !settings_.elasticRound) {
    // Said once at the start: with the output in files on the hosts, the terminal would otherwise stay silent.
    std::string pattern = rankLogPath(settings_.launch.eachRankLogDir, settings_.logTag, 0);
    pattern.replace(pattern.size() - std::string("0.log").size(), std::string::npos, "<RANK>.log");
    notice(strCat("dsrun: every rank writes its output to ", pattern, " on its host"));
  }
  // Twice per agent period (one late beat never costs a miss), and at least once per agent beat so that a
  // silent host is noticed within a beat of its budget.
  uint32_t tick = 500;
  for (const auto& node : nodes_) {
    if (!node->client) continue;
    tick = std::min(tick, node->channel->heartbeatMs() / 2);
    if (node->client->agentBeatMs() > 0) tick = std::min(tick, node->client->agentBeatMs());
  }
  job_->setHeartbeat(std::chrono::milliseconds(std::max<uint32_t>(tick, 10)));
  launched_ = true;
  prelaunchBeats_.stop();  // the driver beats from here on
  job_->start(steadyNow());
  armTimer();
}

void AgentJob::armTimer() {
  const std::optional<Seconds> next = job_->nextDeadline();
  if (next == armedFor_) return;
  armedFor_ = next;
  if (!next) {
    timer_.cancel();
    return;
  }
  timer_.expires_at(steadyTimeOf(*next));
  timer_.async_wait([this, deadline = *next](const boost::system::error_code& ec) {
    if (ec) return;
    armedFor_.reset();
    onTimer(deadline);
  });
}

void AgentJob::onTimer(Seconds deadline) {
  // The timer was set for this deadline: it has passed, whatever rounding the clock conversion did.
  const Seconds at = std::max(steadyNow(), deadline);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (const std::optional<std::string> reason = nodes_[i]->channel->silentAt(steadyTimeOf(at), nodes_[i]->host)) {
      onRootLost(i, *reason);  // a star's host, or a tree's root: its children are then adopted by dsrun
    }
  }
  job_->onTime(at);
}

void AgentJob::onNodeLost(size_t nodeIndex, const std::string& reason) {
  Node& node = *nodes_[nodeIndex];
  for (int rank : node.ranks) flushOutput(rank);
  // The host failed no later than when it was last heard from (a tree member: when its loss was reported).
  job_->onLostAt(nodeIndex, reason, node.client ? node.channel->lastHeardUs(wallClockUs()) : wallClockUs(), steadyNow());
}

void AgentJob::collectHungStacks(const std::string& what, const std::string& host, std::vector<RankOnHost> running) {
  std::vector<StackTarget> targets;
  for (const RankOnHost& r : running) targets.push_back({r.host, r.rank, r.pid});
  // Recorded with the time it was seen, so a failure that arrives meanwhile does not pass for the earlier one.
  TimedFailure hang{wallClockUs(), 1, what, host};
  const std::string dir = strCat(settings_.hangDir.empty() ? settings_.cwd : settings_.hangDir, "/dsrun-hang-", plan_.jobId);
  collectStacks(io_, ssl_, settings_.port, settings_.clientName, plan_.jobId, targets, kStackTimeout,
                [this, hang = std::move(hang), dir](RankStacks stacks) mutable {
                  std::string where = dir;
                  try {
                    writeStackFiles(dir, stacks);
                  } catch (const Error& e) {
                    where = strCat("not written: ", e.what());
                  }
                  hang.what += where;
                  job_->onFailure(std::move(hang), steadyNow());
                });
}

void AgentJob::armSignals() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    noteStopSignal(signal);
    job_->onSignal(signal, steadyNow());
    armSignals();
  });
}

}  // namespace dsrun::launcher
