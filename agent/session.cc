#include "agent/session.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <utility>

#include "agent/mesh_probe.h"
#include "agent/port_preflight.h"
#include "agent/job_table.h"
#include "agent/session_manager.h"
#include "agent/session_wire.h"
#include "agent/store_env.h"
#include "agent/store_service.h"
#include "agent/tree_edge_signal.h"
#include "common/error.h"
#include "common/logging.h"

namespace dsrun::agent {
namespace {

constexpr size_t kReadBufferBytes = 64 * 1024;

}  // namespace

Session::Session(uint64_t id, std::unique_ptr<Connection> connection, std::string peer, SessionManager& manager,
                 JobTable& table, const RequestHandler& handler, Timing timing, TreeServices tree)
    : id_(id),
      connection_(std::move(connection)),
      peer_(std::move(peer)),
      manager_(manager),
      table_(table),
      handler_(handler),
      timing_(timing),
      deadline_(connection_->executor()),
      monitor_(makeMonitor(timing.heartbeatPeriod, timing.heartbeatThreshold,
                           timing.heartbeatPeriod.count() * timing.heartbeatThreshold)),
      tree_(tree),
      decoder_(peer_),
      readBuffer_(kReadBufferBytes),
      heartbeat_(connection_->executor()),
      orphanWait_(connection_->executor()) {}

std::unique_ptr<HeartbeatMonitor> Session::makeMonitor(std::chrono::milliseconds period, int threshold,
                                                       int64_t budgetMs) {
  return std::make_unique<HeartbeatMonitor>(
      static_cast<boost::asio::io_context&>(connection_->executor().context()), period, threshold,
      [this, budgetMs] {
        transition(MemberEvent::PeerLost);
        stop(strCat("no heartbeat for ", budgetMs, " ms, stopping its jobs"));
      },
      [this](int) {
        // Its beats may wait unread in our socket while this loop is behind (a starved CPU, thousands of spawns):
        // then we are late, not the peer silent -- as dsrun and a tree parent judge (AgentChannel::silentAt).
        if (connection_->bytesWaiting() > 0) return monitor_->beat();
        transition(MemberEvent::HeartbeatMissed);
      });
}

void Session::start() {
  DSRUN_CHECK_THREAD(thread_);
  armHandshakeDeadline(0);
  connection_->handshake([self = shared_from_this()](const std::string& failure, const std::string& peerIdentity) {
    self->onHandshake(failure, peerIdentity);
  });
}

void Session::armHandshakeDeadline(int extensions) {
  deadline_.expires_after(timing_.handshakeTimeout);
  deadline_.async_wait([self = shared_from_this(), extensions](const boost::system::error_code& ec) {
    if (ec || self->stopped_ || self->welcomed_) return;
    // The peer's handshake or Hello waits unread: this loop is behind (at 1,000 agents on 2 cores a child's
    // loop got a few ms a second during the spawns, and refused live parents mid-handshake), so it gets more
    // time, a bounded number of times.
    if (extensions < kHandshakeExtensions && self->connection_->bytesWaiting() > 0) {
      DSRUN_LOG(DEBUG) << self->peer_ << ": handshake bytes unread after " << self->timing_.handshakeTimeout.count()
                       << " ms: this loop is behind, waiting again";
      return self->armHandshakeDeadline(extensions + 1);
    }
    self->stop(strCat("refused: no TLS handshake and hello within ",
                      self->timing_.handshakeTimeout.count() * (extensions + 1), " ms"));
  });
}

void Session::onHandshake(const std::string& failure, const std::string& peerIdentity) {
  if (stopped_) return;
  if (!failure.empty()) {
    // Nothing of the protocol was read: the peer never got past TLS.
    stop(strCat("refused: TLS handshake failed: ", failure));
    return;
  }
  DSRUN_LOG(INFO) << peer_ << ": TLS peer authenticated (" << peerIdentity << ")";
  peerIdentity_ = peerIdentity;
  peerIsNode_ = connection_->peerIsNode();  // once: it confines every message this peer sends
  readMore();
}

void Session::readMore() {
  if (stopped_ || closing_) return;
  connection_->readSome(boost::asio::buffer(readBuffer_),
                        [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
                          self->onRead(ec, n);
                        });
}

void Session::onRead(const boost::system::error_code& ec, size_t n) {
  if (stopped_ || closing_) return;
  if (ec) {
    std::string why =
        connection_->isDisconnect(ec) ? "launcher disconnected" : strCat("read: ", connection_->describe(ec));
    try {
      decoder_.finish();
    } catch (const ParseError& e) {
      why += strCat(" (", e.what(), ")");
    }
    stop(strCat(why, welcomed_ ? ", stopping its jobs" : ""));
    return;
  }
  std::vector<wire::Envelope> envelopes;
  try {
    envelopes = decoder_.feed(std::string_view(readBuffer_.data(), n));
  } catch (const ParseError& e) {
    stop(strCat("closing: ", e.what()));
    return;
  }
  for (const auto& envelope : envelopes) {
    if (stopped_ || closing_) return;
    try {
      dispatch(envelope);
    } catch (const std::exception& e) {
      // A bug must not take the whole agent (and everyone's jobs) down: end this session only.
      stop(strCat("closing: internal error handling ", messageName(envelope), ": ", e.what()));
      return;
    }
  }
  readMore();
}

void Session::dispatch(const wire::Envelope& envelope) {
  if (welcomed_) {
    monitor_->beat();
    if (state_ == MemberState::Suspect) transition(MemberEvent::HeartbeatSeen);
    // A probed tree launch (or adoption) starts nothing before TreeGo; dsrun beats from then on.
    if (envelope.has_launch() || (envelope.has_tree_launch() && !envelope.tree_launch().has_probe()) ||
        (envelope.has_tree_adopt() && !envelope.tree_adopt().launch().has_probe()) || envelope.has_tree_go()) {
      useLauncherBudget(true);
    }
    // The parent ends the job here and will adopt nobody: stop at once instead of waiting for an adopter.
    if (edgeSignalOf(envelope, hello_.tree_edge_signals()) == EdgeSignal::Released) {
      released_ = true;
      releasedJobEnds_ = releaseEndsJob(envelope);
    }
  }
  SessionView view;
  view.welcomed = welcomed_;
  view.ownJobs = table_.jobIdsOf(id_);
  view.agentJobs = table_.jobIds();
  for (const auto& [job, pending] : pendingOwn_) {  // admitted tree launches whose own ranks wait (runTree)
    view.ownJobs.insert(job);
    view.agentJobs.insert(job);
  }
  if (!welcomed_) view.localAddress = connection_->localAddress();
  view.peerIsNode = peerIsNode_;
  for (auto& action : handler_.handle(envelope, view)) {
    if (stopped_) return;
    switch (action.kind) {
      case Action::Kind::Send:
        send(action.envelope);
        break;
      case Action::Kind::MarkWelcomed:
        onWelcomed(envelope.hello());
        break;
      case Action::Kind::Credit:
        outputCredit_ += static_cast<int64_t>(std::min<uint64_t>(action.bytes, uint64_t{1} << 40));
        if (relay_) relay_->credited(action.bytes);
        if (!congested()) runDrainedCallbacks();
        break;
      case Action::Kind::Launch:
        launchJob(action.launch, false);
        break;
      case Action::Kind::Store:
        routeStore(action.envelope);
        break;
      case Action::Kind::Signal:
        DSRUN_LOG(INFO) << peer_ << ": signal " << action.signal << " for job " << action.jobId;
        if (auto pending = pendingOwn_.find(action.jobId); pending != pendingOwn_.end()) {
          pending->second.signals.push_back(action.signal);  // delivered once the ranks here are started
        } else {
          table_.signalJob(action.jobId, action.signal);
        }
        if (relay_) relay_->signal(action.jobId, action.signal);  // the same pass: the subtree gets it now
        break;
      case Action::Kind::TreeLaunch:
        startTree(action.envelope.tree_launch());
        break;
      case Action::Kind::TreeGo:
        goTree(action.jobId);
        break;
      case Action::Kind::TreeAdopt:
        adoptTree(action.envelope.tree_adopt().launch());
        break;
      case Action::Kind::Close:
        // A parent releasing a finished job is the normal end of a tree edge: logged at INFO, not as a refusal.
        closeAfterFlush(released_ ? action.reason : strCat("closing: ", action.reason));
        break;
      case Action::Kind::ProbeMesh: {
        DSRUN_LOG(INFO) << peer_ << ": mesh probe of " << action.probe.targets_size() << " agent(s)";
        MeshProbe::start(connection_->executor(), action.probe,
                         [self = shared_from_this()](wire::Envelope reply) { self->send(reply); });
        break;
      }
      case Action::Kind::CheckPort: {
        wire::Envelope reply = answerPortCheck(action.port, handler_.config().agentHost);
        const std::string& error = reply.port_check_reply().error();
        DSRUN_LOG(INFO) << peer_ << ": MASTER_PORT pre-flight for port " << action.port << ": "
                        << (error.empty() ? strCat("port ", reply.port_check_reply().port(), " is free")
                                          : error.substr(0, error.find('\n')));
        send(reply);
        break;
      }
    }
  }
}

void Session::useLauncherBudget(bool launched) {
  const auto ownBudget = timing_.heartbeatPeriod * timing_.heartbeatThreshold;
  const auto budget = std::chrono::milliseconds(
      launcherSilenceBudgetMs(launcherSilenceMs_, static_cast<uint64_t>(ownBudget.count())));
  // A longer budget from the welcome on: dsrun beats from then on, but its loop, connecting to 1,000 agents on
  // a loaded machine, left agents welcomed first without a beat for their own 10 s. A shorter one from the
  // launch on: the agent's own timeout guards a launcher that connects and never launches.
  if (budget < ownBudget && !launched) return;
  const uint32_t launcherMs = launcherSilenceMs_;
  launcherSilenceMs_ = 0;  // once
  if (budget == ownBudget) return;
  // The launcher gives this host up after that much silence of ours and ends its job; the ranks here must not
  // outlive that by our own longer timeout (a node cut off would keep training otherwise), nor be stopped by
  // our shorter one while the launcher still counts on them.
  const auto period = std::max(std::chrono::milliseconds(1), budget / timing_.heartbeatThreshold);
  monitor_->stop();
  monitor_ = makeMonitor(period, timing_.heartbeatThreshold, budget.count());
  monitor_->start();
  DSRUN_LOG(INFO) << peer_ << ": its jobs stop after " << budget.count()
                  << " ms without a message from the launcher (its budget for this host: " << launcherMs << " ms)";
}

void Session::launchJob(const wire::LaunchRequest& launch, bool parentIsAgent) {
  JobSpec spec = toJobSpec(launch);
  if (launch.has_rendezvous()) {
    try {
      if (tree_.stores == nullptr) throw Error("this agent serves no store rendezvous");
      StoreHub::Send up;
      if (parentIsAgent) {
        up = [weak = weak_from_this()](const wire::Envelope& e) {
          if (auto self = weak.lock()) self->send(e);
        };
      }
      const uint16_t port = tree_.stores->open(launch.job_id(), launch.rendezvous(), std::move(up));
      storeJobs_.push_back(launch.job_id());
      pointRanksAtStore(spec, port);
    } catch (const Error& e) {
      DSRUN_LOG(WARN) << peer_ << ": job " << launch.job_id() << ": " << e.what();
      // As a spawn failure: none of the job's ranks here will start (through the tree, batched with the subtree's).
      std::vector<int> unstarted;
      for (const auto& rank : launch.ranks()) unstarted.push_back(rank.rank());
      deliver(event::LaunchFailed{launch.job_id(), strCat("--rendezvous agent: ", e.what()), std::move(unstarted)});
      return;
    }
  }
  table_.launch(id_, spec);
}

void Session::closeStores() {
  if (tree_.stores == nullptr) return;
  if (storeLink_ != 0) tree_.stores->forgetLink(std::exchange(storeLink_, 0));
  for (const auto& job : storeJobs_) tree_.stores->close(job);
  storeJobs_.clear();
}

void Session::routeStore(const wire::Envelope& envelope) {
  if (tree_.stores == nullptr) return;
  if (envelope.has_store_reply()) {
    // From the tree parent: only for a job whose store this connection opened (a parent speaks for its job only).
    const std::string& job = envelope.store_reply().job_id();
    if (std::find(storeJobs_.begin(), storeJobs_.end(), job) == storeJobs_.end()) {
      DSRUN_LOG(WARN) << peer_ << ": ignored a store reply for job '" << job << "', which this connection does not carry";
      return;
    }
    tree_.stores->fromAbove(envelope.store_reply());
    return;
  }
  if (storeLink_ == 0) storeLink_ = tree_.stores->newLinkId();
  tree_.stores->fromBelow(storeLink_, envelope.store_request(), [weak = weak_from_this()](const wire::Envelope& e) {
    if (auto self = weak.lock()) self->send(e);
  });
}


void Session::onWelcomed(const wire::Hello& hello) {
  welcomed_ = true;
  hello_ = hello;
  deadline_.cancel();
  transition(MemberEvent::Welcomed);
  launcherSilenceMs_ = hello.launcher_silence_ms();
  monitor_->start();
  useLauncherBudget(false);
  windowed_ = hello.output_window_bytes() > 0;
  outputCredit_ = static_cast<int64_t>(std::min<uint64_t>(hello.output_window_bytes(), uint64_t{1} << 40));
  DSRUN_LOG(INFO) << peer_ << ": hello from '" << hello.client_name() << "'"
                  << (windowed_ ? strCat(", output window ", hello.output_window_bytes(), " bytes") : "");
  if (hello.agent_heartbeats()) {
    beatInterval_ = std::chrono::milliseconds(agentBeatIntervalMs(
        hello.agent_heartbeat_ms(), static_cast<uint32_t>(timing_.heartbeatPeriod.count())));
    armHeartbeat();
  }
}

void Session::armHeartbeat() {
  // At most half a period: one late beat never makes the launcher count a miss.
  heartbeat_.expires_after(beatInterval_);
  heartbeat_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->stopped_ || self->closing_) return;
    wire::Envelope beat;
    beat.mutable_heartbeat();
    self->send(beat);
    self->armHeartbeat();
  });
}

void Session::send(const wire::Envelope& envelope) {
  if (orphaned_) {
    // Kept for the adopter; output is paused meanwhile (congested()), so this holds events and in-flight output.
    orphanQueue_.push_back(envelope);
    return;
  }
  if (stopped_ || closing_ || overflowed_) return;
  outputCredit_ -= static_cast<int64_t>(outputBytes(envelope));
  std::string frame = proto::encodeFrame(envelope);
  queuedBytes_ += frame.size();
  writeQueue_.push_back(std::move(frame));
  if (queuedBytes_ > kMaxQueuedBytes) {
    // Posted: send() runs inside the JobTable's and the handler's loops, which stop() re-enters.
    overflowed_ = true;
    boost::asio::post(connection_->executor(), [self = shared_from_this()] {
      self->stop(strCat("closing: the launcher does not read its replies (", self->queuedBytes_,
                        " bytes queued), stopping its jobs"));
    });
    return;
  }
  writeNext();
}

void Session::deliver(JobEvent event) {
  if ((stopped_ && !orphaned_) || closing_ || overflowed_) return;
  if (relay_) {
    relay_->up(toEnvelope(std::move(event)));  // batched with the subtree's events
  } else {
    send(toEnvelope(std::move(event)));
  }
}

void Session::writeNext() {
  if (writing_ || stopped_) return;
  if (writeQueue_.empty()) {
    if (closing_) stop(closeReason_);
    return;
  }
  writing_ = true;
  connection_->write(boost::asio::buffer(writeQueue_.front()),
                     [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                       self->writing_ = false;
                       if (self->stopped_) return;
                       if (ec) {
                         self->stop(strCat("write: ", self->connection_->describe(ec), ", stopping its jobs"));
                         return;
                       }
                       self->queuedBytes_ -= self->writeQueue_.front().size();
                       self->writeQueue_.pop_front();
                       if (self->queuedBytes_ < kLowWaterBytes && !self->congested()) {
                         self->runDrainedCallbacks();
                       }
                       self->writeNext();
                     });
}

void Session::whenDrained(std::function<void()> resume) {
  drainedCallbacks_.push_back(std::move(resume));
  if ((stopped_ && !orphaned_) || !congested()) runDrainedCallbacks();
}

void Session::runDrainedCallbacks() {
  // Posted, never called from here: a resumed reader asks congested()/whenDrained() again at once,
  // and calling it inline recursed without bound while a stopped session still looked congested
  // (the agent's SIGSEGV).
  auto callbacks = std::exchange(drainedCallbacks_, {});
  for (auto& fn : callbacks) boost::asio::post(connection_->executor(), std::move(fn));
}

void Session::closeAfterFlush(const std::string& reason) {
  if (closing_ || stopped_) return;
  closing_ = true;
  closeReason_ = reason;
  writeNext();
}

void Session::drain() {
  if (orphaned_) {
    abandon(strCat("agent shutting down, stopping job ", treeJob_, " (it waited for an adopter)"));
    return;
  }
  if (stopped_) return;
  if (!welcomed_) {
    stop("refused: agent shutting down");  // mid-handshake: nothing may be written yet
    return;
  }
  transition(MemberEvent::Shutdown);
  monitor_->stop();  // a draining peer is closed by us, not judged by its heartbeats
  if (relay_) relay_->closeAll(false);  // this node goes away: its parent adopts the children
  send(makeError("", "agent shutting down"));
  closeAfterFlush("agent shutting down, stopping its jobs");
}

void Session::stop(const std::string& reason) {
  if (stopped_) {
    if (orphaned_) abandon(strCat(reason.empty() ? "stopped" : reason, " while job ", treeJob_, " waited for an adopter"));
    return;
  }
  const bool running = table_.ownerOf(treeJob_) == id_ || (relay_ && relay_->active());
  if (adoptable_ && !released_ && !treeJob_.empty() && running) {
    orphan(reason.empty() ? "connection closed" : reason);
    return;
  }
  auto self = shared_from_this();  // manager_.remove() may drop the last owner
  stopped_ = true;
  if (!reason.empty()) {
    const bool refused = startsWith(reason, "refused") || startsWith(reason, "closing");
    if (refused) {
      DSRUN_LOG(WARN) << peer_ << ": " << reason;
    } else {
      DSRUN_LOG(INFO) << peer_ << ": " << reason;
    }
  }
  hangUp();
  windowed_ = false;  // nobody reads any more: paused pumps resume and their output is dropped
  table_.stopJobsOf(id_, reason.empty() ? "connection closed" : reason);
  // The job ends here: the children stop theirs at once. A node given up by its parent (released, the job not
  // ended) leaves its children to that parent instead, which adopts them.
  if (relay_) relay_->closeAll(!released_ || releasedJobEnds_);
  closeStores();
  runDrainedCallbacks();
  manager_.remove(id_);  // may drop the last owning reference; handlers still hold one
}

void Session::hangUp() {
  transition(MemberEvent::Disconnected);
  deadline_.cancel();
  heartbeat_.cancel();
  monitor_->stop();
  connection_->close();
  writeQueue_.clear();
  queuedBytes_ = 0;
}

void Session::transition(MemberEvent event) {
  const MemberState next = nextState(kMemberTransitions, state_, event);
  if (next != state_) {
    DSRUN_LOG(DEBUG) << peer_ << ": " << toString(state_) << " -> " << toString(next) << " (" << toString(event)
                     << ")";
  }
  state_ = next;
}

}  // namespace dsrun::agent
