// Session's side of tree launches (docs/agent.md "Tree launch", "An interior agent dies"): admitting a launch
// or an adoption, running it, and a parent's loss — the wait for an adopter, the hand-over to it, or the stop.
// Split from session.cc, which keeps the connection, its reads and writes, heartbeats and the star protocol.
#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>
#include <utility>

#include "agent/job_table.h"
#include "agent/session.h"
#include "agent/session_manager.h"
#include "agent/session_wire.h"
#include "agent/store_service.h"
#include "agent/tree_edge_signal.h"
#include "agent/tree_gate.h"
#include "common/error.h"
#include "common/logging.h"

namespace dsrun::agent {

proto::TreeIdentity Session::peerIdentity() const {
  proto::TreeIdentity peer;
  peer.launcher = !peerIsNode_;
  peer.names = [this](const std::string& host) { return connection_->peerNames(host); };
  peer.description = strCat(peer_, " (", peerIdentity_, ")");
  return peer;
}

namespace {

/// The longest a tree node's own ranks wait for its children's launches to go out: a child that cannot be
/// reached costs its parent's ranks this much, not the whole connect timeout.
constexpr auto kOwnRanksWait = std::chrono::milliseconds(2000);

int64_t nowUnixUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void Session::startTree(const wire::TreeLaunch& launch) {
  AdmittedTree admitted;
  try {
    if (tree_.gate == nullptr || tree_.dial == nullptr) throw Error("this agent serves no tree launches");
    if (relay_) throw Error("this connection already carries a tree job");
    admitted = tree_.gate->admit(launch, peerIdentity(), nowUnixUs());
    if (table_.jobIds().count(admitted.own.job_id()) > 0 || pendingOwn_.count(admitted.own.job_id()) > 0) {
      throw Error(strCat("job '", admitted.own.job_id(), "' is already running on this agent"));
    }
  } catch (const Error& e) {
    refuseTree(launch, e.what());
    return;
  }
  if (tree_.testHold) {
    DSRUN_LOG(WARN) << peer_ << ": --test_hold_tree_launches: holding job " << admitted.own.job_id() << " (a straggler)";
    return;
  }
  runTree(launch, std::move(admitted));
}

void Session::refuseTree(const wire::TreeLaunch& launch, const std::string& why) {
  DSRUN_LOG(WARN) << peer_ << ": refused: " << why;
  wire::TreeLaunchHeader header;
  header.ParseFromString(launch.header());
  send(makeError(header.job_id(), strCat("tree launch refused: ", why)));
  // A parent agent that forwards what this node refuses is broken or not the parent: it gets nothing more.
  if (peerIsNode_) closeAfterFlush("closing: tree launch refused");
}

void Session::adoptTree(const wire::TreeLaunch& launch) {
  std::shared_ptr<Session> carrier;
  AdmittedTree admitted;
  try {
    if (tree_.gate == nullptr || tree_.dial == nullptr) throw Error("this agent serves no tree launches");
    if (relay_) throw Error("this connection already carries a tree job");
    admitted = tree_.gate->adopt(launch, peerIdentity(), nowUnixUs(), [&](const std::string& job) -> const std::string* {
      // By the session that carries it, not the job table: its ranks here may have ended while its children's
      // run, or while it waited (their ends are held for the adopter).
      carrier = manager_.treeCarrier(job);
      if (!carrier || carrier.get() == this) {
        // Running here, but not as a tree job of another connection: nothing to adopt, and not to start again.
        if (table_.ownerOf(job)) throw Error(strCat("job '", job, "' runs on this agent, but not as an adoptable tree job"));
        return nullptr;
      }
      return &carrier->treeRoot();
    });
  } catch (const Error& e) {
    refuseTree(launch, strCat("adoption: ", e.what()));
    return;
  }
  wire::Envelope ack;
  if (admitted.rebind) {
    // The answer first, then what the node held and the ends it passes up again.
    ack.mutable_tree_adopted()->set_job_id(carrier->treeJob());
    send(ack);
    takeOver(*carrier);
    return;
  }
  DSRUN_LOG(INFO) << peer_ << ": adopted before its parent forwarded the launch";
  ack.mutable_tree_adopted()->set_job_id(admitted.own.job_id());
  send(ack);
  runTree(launch, std::move(admitted));
}

void Session::takeOver(Session& from) {
  treeJob_ = from.treeJob_;
  treeRoot_ = from.treeRoot_;
  adoptable_ = from.adoptable_;
  treeKillGraceS_ = from.treeKillGraceS_;
  relay_ = std::move(from.relay_);
  pendingOwn_ = std::move(from.pendingOwn_);  // own ranks not forked yet: started here when their time comes
  from.pendingOwn_.clear();
  // Their store (--rendezvous agent) opens when they start: up this connection, or, adopted by dsrun, through
  // rank 0's agent, as a root's does.
  for (auto& [job, own] : pendingOwn_) own.parentIsAgent = peerIsNode_;
  // Their time may have come while the node waited for us (startOwnRanks keeps them for the adopter): the
  // children had their launches long before the adoption (one silence budget at least), so they start now.
  for (const auto& [job, own] : pendingOwn_) {
    boost::asio::post(connection_->executor(), [weak = weak_from_this(), job = job] {
      if (auto self = weak.lock()) self->startOwnRanks(job);
    });
  }
  storeJobs_ = std::move(from.storeJobs_);  // closed when this session ends the job
  from.storeJobs_.clear();
  if (relay_) relay_->rebind(TreeRelay::Upstream{[this](const wire::Envelope& e) { send(e); }, [this] { return windowed_; },
                                         [this] { return hello_.merged_rank_events(); }});
  table_.reassign(treeJob_, id_);
  DSRUN_LOG(INFO) << peer_ << ": job " << treeJob_ << " re-attached here from " << from.peer()
                  << (from.gaveUp_ ? " (its parent was lost, and it had stopped waiting: what it held is passed up)"
                      : from.orphaned_ ? " (its parent was lost)" : " (its parent was given up)");
  for (auto& e : from.handOver()) {
    if (!e.has_store_request()) send(e);  // the job's store sends what it has pending again, below
  }
  if (tree_.stores == nullptr) return;
  // Adopted by an ancestor agent: its store requests go up this connection; by dsrun: to rank 0's agent.
  StoreHub::Send up;
  if (peerIsNode_) {
    up = [weak = weak_from_this()](const wire::Envelope& e) {
      if (auto self = weak.lock()) self->send(e);
    };
  }
  for (const auto& job : storeJobs_) tree_.stores->reattach(job, up);
}

std::vector<wire::Envelope> Session::handOver() {
  auto self = shared_from_this();  // manager_.remove() drops the manager's reference
  auto held = std::exchange(orphanQueue_, {});
  const std::string job = std::exchange(treeJob_, {});
  treeRoot_.clear();
  adoptable_ = false;
  orphaned_ = false;
  gaveUp_ = false;
  orphanWait_.cancel();
  runDrainedCallbacks();  // paused pumps ask their (new) owner again
  if (!stopped_) {
    // A parent given up by an ancestor (or cut off from dsrun) while still connected: told, so that it neither
    // reports this node lost nor re-fans below it; the job lives on with the adopter.
    send(reattachedMessage(job, hello_.tree_edge_signals()));
    // A normal end of this edge (logged at INFO by stop(); a reason starting "closing" is a refusal, at WARN).
    closeAfterFlush(strCat("job ", job, " was adopted by an ancestor, closing the old parent's connection"));
    return held;
  }
  manager_.remove(id_);
  return held;
}

void Session::runTree(const wire::TreeLaunch& launch, AdmittedTree admitted) {
  const std::string& job = admitted.own.job_id();
  DSRUN_LOG(INFO) << peer_ << ": tree launch of job " << job << " signed by '" << admitted.launcher << "': "
                  << admitted.own.ranks_size() << " rank(s) here, " << admitted.children.size() << " child(ren)";
  treeJob_ = job;
  treeRoot_ = admitted.root;
  adoptable_ = admitted.adoptable;
  treeKillGraceS_ = admitted.own.kill_grace_s();
  TreeRelay::Upstream up{[this](const wire::Envelope& e) { send(e); }, [this] { return windowed_; },
                         [this] { return hello_.merged_rank_events(); }};
  relay_ = std::make_unique<TreeRelay>(static_cast<boost::asio::io_context&>(connection_->executor().context()),
                                       *tree_.dial, strCat("dsrun-agent on ", handler_.config().agentHost),
                                       std::move(up), tree_.stores);
  if (launch.has_probe()) {
    holdTree(launch, std::move(admitted));  // session_tree_probe.cc
    return;
  }
  // The children first, this node's own ranks once every child has its launch (or is lost), or after
  // kOwnRanksWait at most: forking a rank holds this loop until the rank has exec'd, and the children's
  // handshakes need it. Forked first, every level's spawns delayed the next level's launch (~7 ms a level on a
  // cluster), and on one 2-core machine running 1,000 agents the handshakes met 8,000 spawns and timed out
  // (docs/benchmarks.md "Launch at scale").
  pendingOwn_[job] = PendingOwn{admitted.own, peerIsNode_, {}};
  auto wait = std::make_shared<boost::asio::steady_timer>(connection_->executor(), kOwnRanksWait);
  // By the job's manager, not this session: an adopter may have taken the pending ranks over meanwhile.
  auto startOwn = [&manager = manager_, job, wait, weak = weak_from_this()] {
    wait->cancel();
    if (auto self = weak.lock()) {
      if (self->pendingOwn_.count(job) > 0) return self->startOwnRanks(job);
    }
    if (auto carrier = manager.treeCarrier(job)) carrier->startOwnRanks(job);
  };
  wait->async_wait([startOwn](const boost::system::error_code& ec) {
    if (!ec) startOwn();
  });
  relay_->forward(job, std::move(admitted.children), childTiming(), std::nullopt, startOwn);
}

void Session::startOwnRanks(const std::string& job) {
  auto pending = pendingOwn_.find(job);
  if (pending == pendingOwn_.end()) return;  // started already (the children, then the deadline)
  // Orphaned (stopped_, waiting for an adopter): kept for the adopter, which starts them (takeOver). Dropped
  // here, they were never started nor reported, and the launcher would wait for ends that never come.
  if (orphaned_) return;
  PendingOwn own = std::move(pending->second);
  pendingOwn_.erase(pending);
  if (stopped_ || closing_) return;
  launchJob(own.launch, own.parentIsAgent);
  for (int signal : own.signals) table_.signalJob(job, signal);  // asked for while the children were dialled
}

std::chrono::milliseconds Session::orphanWait() const {
  // The adopter (an ancestor) notices the parent's death no later than one silence budget after this node
  // does (both watch the same parent with the same budget; a reset is seen by both at once), then dials,
  // shakes hands and sends within its connect timeout: a second budget covers that on any sane network.
  return std::chrono::milliseconds(2 * static_cast<int64_t>(childTiming().silenceMs));
}

void Session::orphan(const std::string& reason) {
  stopped_ = true;
  orphaned_ = true;
  const auto wait = orphanWait();
  std::string why = reason;
  if (const size_t at = why.find(", stopping its jobs"); at != std::string::npos) why.erase(at);  // not yet
  DSRUN_LOG(WARN) << peer_ << ": " << why << "; job " << treeJob_ << " waits up to " << wait.count()
                  << " ms for an ancestor to adopt it";
  hangUp();
  orphanWait_.expires_after(wait);
  orphanWait_.async_wait([self = shared_from_this(), wait](const boost::system::error_code& ec) {
    if (ec || !self->orphaned_) return;
    self->giveUp(wait);
  });
}

std::chrono::milliseconds Session::orphanHold() const {
  // Long enough for the job stopped here and below to end (its kill grace, then the kill wait for a rank that
  // ignores SIGKILL), and then as long again as the orphan waited, plus a dial: an adopter that late still gets
  // every end. Longer serves nobody: dsrun gives ranks up about that long after it stops a job (the kill grace,
  // its 15 s for the agents' kill wait, twice the heartbeat budget and a connect; docs/agent.md "What bounds
  // dsrun's wait after a stop"), and it stops the job when it hears of the loss that orphaned this node.
  const auto& options = table_.options();
  const auto grace = treeKillGraceS_ > 0 ? std::chrono::milliseconds(static_cast<int64_t>(treeKillGraceS_ * 1000))
                                         : options.killGrace;
  return grace + options.killWait + orphanWait() + childTiming().connectTimeout;
}

void Session::giveUp(std::chrono::milliseconds waited) {
  gaveUp_ = true;
  const std::string why = strCat("no ancestor adopted job ", treeJob_, " within ", waited.count(), " ms");
  const auto hold = orphanHold();
  DSRUN_LOG(WARN) << peer_ << ": " << why << ", stopping it here and below; what it reports is kept "
                  << hold.count() << " ms more for a late adopter";
  // Before, the orphan released its children with the job's end and dropped what it held: the ends of its own
  // ranks and of every node below it, re-attached ones included, which nobody then reported (docs/benchmarks.md
  // "Launch at scale", 1,000 agents). Now they are kept, and the children stay attached, for whoever adopts late.
  for (auto& [job, own] : std::exchange(pendingOwn_, {})) {
    // Never forked (they waited for their turn, then for an adopter), never will be: said so as a spawn failure
    // says it, so that nobody waits for their ends.
    std::vector<int> unstarted;
    for (const auto& rank : own.launch.ranks()) unstarted.push_back(rank.rank());
    deliver(event::LaunchFailed{job, strCat(handler_.config().agentHost, ": ", why, ", so its ranks here never started"),
                                std::move(unstarted)});
  }
  table_.stopJobsOf(id_, why);
  // One SIGTERM down the subtree, as dsrun's stop: each agent below stops its ranks (SIGKILL after the grace)
  // and their ends come up to this node, where they are held with the rest.
  if (relay_) relay_->stop(treeJob_);
  orphanWait_.expires_after(hold);
  orphanWait_.async_wait([self = shared_from_this(), hold](const boost::system::error_code& ec) {
    if (ec || !self->orphaned_) return;
    self->abandon(strCat("no ancestor adopted job ", self->treeJob_, " within ", hold.count(),
                         " ms of its stop either, dropping the ", self->orphanQueue_.size(), " message(s) it held",
                         self->relay_ && self->relay_->active() ? " and releasing its children" : ""));
  });
}

void Session::abandon(const std::string& reason) {
  auto self = shared_from_this();
  orphaned_ = false;
  gaveUp_ = false;
  // Called by the agent's shutdown too: the wait's timer held this session, and the agent's loop, until it fired.
  orphanWait_.cancel();
  DSRUN_LOG(WARN) << peer_ << ": " << reason;
  orphanQueue_.clear();
  windowed_ = false;
  table_.stopJobsOf(id_, reason);
  if (relay_) relay_->closeAll(true);
  closeStores();
  runDrainedCallbacks();
  manager_.remove(id_);
}

ChildLink::Timing Session::childTiming() const {
  ChildLink::Timing t;
  const auto period = static_cast<uint32_t>(timing_.heartbeatPeriod.count());
  t.beatMs = hello_.agent_heartbeat_ms() > 0 ? agentBeatIntervalMs(hello_.agent_heartbeat_ms(), period)
                                             : std::max<uint32_t>(1, period / 2);
  t.silenceMs = hello_.launcher_silence_ms() > 0 ? hello_.launcher_silence_ms()
                                                 : period * static_cast<uint32_t>(timing_.heartbeatThreshold);
  // A child that has not welcomed us is as silent as one that stopped beating: the launch's budget, which
  // dsrun scales with the job (silence_budget.h), bounds it too, when longer than our own handshake deadline.
  // At 1,000 agents on 2 cores the children's handshakes ran during 8,000 spawns and a fixed 10 s gave live
  // children up "waiting for welcome" (docs/benchmarks.md "Launch at scale").
  t.connectTimeout = std::max(timing_.handshakeTimeout, std::chrono::milliseconds(t.silenceMs));
  if (hello_.output_window_bytes() > 0) t.outputWindowBytes = hello_.output_window_bytes();
  return t;
}

}  // namespace dsrun::agent
