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
#include "agent/tree_gate.h"
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
      heartbeat_(connection_->executor()) {}

std::unique_ptr<HeartbeatMonitor> Session::makeMonitor(std::chrono::milliseconds period, int threshold,
                                                       int64_t budgetMs) {
  return std::make_unique<HeartbeatMonitor>(
      static_cast<boost::asio::io_context&>(connection_->executor().context()), period, threshold,
      [this, budgetMs] {
        transition(MemberEvent::PeerLost);
        stop(strCat("no heartbeat for ", budgetMs, " ms, stopping its jobs"));
      },
      [this](int) { transition(MemberEvent::HeartbeatMissed); });
}

void Session::start() {
  DSRUN_CHECK_THREAD(thread_);
  deadline_.expires_after(timing_.handshakeTimeout);
  deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->stopped_ || self->welcomed_) return;
    self->stop(strCat("refused: no TLS handshake and hello within ", self->timing_.handshakeTimeout.count(), " ms"));
  });
  connection_->handshake([self = shared_from_this()](const std::string& failure, const std::string& peerIdentity) {
    self->onHandshake(failure, peerIdentity);
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
    if (envelope.has_launch() || envelope.has_tree_launch()) useLauncherBudget();
  }
  SessionView view;
  view.welcomed = welcomed_;
  view.ownJobs = table_.jobIdsOf(id_);
  view.agentJobs = table_.jobIds();
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
        table_.signalJob(action.jobId, action.signal);
        if (relay_) relay_->signal(action.jobId, action.signal);  // the same pass: the subtree gets it now
        break;
      case Action::Kind::TreeLaunch:
        startTree(action.envelope.tree_launch());
        break;
      case Action::Kind::Close:
        closeAfterFlush(strCat("closing: ", action.reason));
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

void Session::useLauncherBudget() {
  const auto ownBudget = timing_.heartbeatPeriod * timing_.heartbeatThreshold;
  if (launcherSilenceMs_ == 0 || std::chrono::milliseconds(launcherSilenceMs_) >= ownBudget) return;
  // The launcher gives this host up after that much silence of ours and ends its job; the ranks here must not
  // outlive that by our own longer timeout (a node cut off would keep training otherwise). From the
  // launch on, not before: the launcher beats once its ranks run, not while it connects and probes the hosts.
  const auto period = std::max(std::chrono::milliseconds(1),
                               std::chrono::milliseconds(launcherSilenceMs_) / timing_.heartbeatThreshold);
  monitor_->stop();
  monitor_ = makeMonitor(period, timing_.heartbeatThreshold, launcherSilenceMs_);
  monitor_->start();
  DSRUN_LOG(INFO) << peer_ << ": the launcher gives this host up after " << launcherSilenceMs_
                  << " ms of silence; its jobs stop after as long without a message from it";
  launcherSilenceMs_ = 0;  // once
}

void Session::startTree(const wire::TreeLaunch& launch) {
  const bool fromNode = peerIsNode_;
  proto::TreeIdentity peer;
  peer.launcher = !fromNode;
  peer.names = [this](const std::string& host) { return connection_->peerNames(host); };
  peer.description = strCat(peer_, " (", peerIdentity_, ")");
  AdmittedTree admitted;
  try {
    if (tree_.gate == nullptr || tree_.dial == nullptr) throw Error("this agent serves no tree launches");
    admitted = tree_.gate->admit(launch, peer, std::chrono::duration_cast<std::chrono::microseconds>(
                                                   std::chrono::system_clock::now().time_since_epoch())
                                                   .count());
    if (table_.jobIds().count(admitted.own.job_id()) > 0) {
      throw Error(strCat("job '", admitted.own.job_id(), "' is already running on this agent"));
    }
  } catch (const Error& e) {
    DSRUN_LOG(WARN) << peer_ << ": refused: " << e.what();
    wire::TreeLaunchHeader header;
    header.ParseFromString(launch.header());
    send(makeError(header.job_id(), strCat("tree launch refused: ", e.what())));
    // A parent agent that forwards what this node refuses is broken or not the parent: it gets nothing more.
    if (fromNode) closeAfterFlush("closing: tree launch refused");
    return;
  }
  const std::string& job = admitted.own.job_id();
  DSRUN_LOG(INFO) << peer_ << ": tree launch of job " << job << " signed by '" << admitted.launcher << "': "
                  << admitted.own.ranks_size() << " rank(s) here, " << admitted.children.size() << " child(ren)";
  if (!relay_) {
    TreeRelay::Upstream up{[this](const wire::Envelope& e) { send(e); }, [this] { return windowed_; }};
    relay_ = std::make_unique<TreeRelay>(static_cast<boost::asio::io_context&>(connection_->executor().context()),
                                         *tree_.dial, strCat("dsrun-agent on ", handler_.config().agentHost),
                                         std::move(up), tree_.stores);
  }
  // The children first: their connections and handshakes proceed while this node forks its own ranks.
  relay_->forward(job, std::move(admitted.children), childTiming());
  launchJob(admitted.own, fromNode);
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

void Session::routeStore(const wire::Envelope& envelope) {
  if (tree_.stores == nullptr) return;
  if (envelope.has_store_reply()) {
    tree_.stores->fromAbove(envelope.store_reply());
    return;
  }
  if (storeLink_ == 0) storeLink_ = tree_.stores->newLinkId();
  tree_.stores->fromBelow(storeLink_, envelope.store_request(), [weak = weak_from_this()](const wire::Envelope& e) {
    if (auto self = weak.lock()) self->send(e);
  });
}

ChildLink::Timing Session::childTiming() const {
  ChildLink::Timing t;
  t.connectTimeout = timing_.handshakeTimeout;
  const auto period = static_cast<uint32_t>(timing_.heartbeatPeriod.count());
  t.beatMs = hello_.agent_heartbeat_ms() > 0 ? agentBeatIntervalMs(hello_.agent_heartbeat_ms(), period)
                                             : std::max<uint32_t>(1, period / 2);
  t.silenceMs = hello_.launcher_silence_ms() > 0 ? hello_.launcher_silence_ms()
                                                 : period * static_cast<uint32_t>(timing_.heartbeatThreshold);
  if (hello_.output_window_bytes() > 0) t.outputWindowBytes = hello_.output_window_bytes();
  return t;
}

void Session::onWelcomed(const wire::Hello& hello) {
  welcomed_ = true;
  hello_ = hello;
  deadline_.cancel();
  transition(MemberEvent::Welcomed);
  launcherSilenceMs_ = hello.launcher_silence_ms();
  monitor_->start();
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
  if (stopped_ || closing_ || overflowed_) return;
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
  if (stopped_ || !congested()) runDrainedCallbacks();
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
  if (stopped_) return;
  if (!welcomed_) {
    stop("refused: agent shutting down");  // mid-handshake: nothing may be written yet
    return;
  }
  transition(MemberEvent::Shutdown);
  monitor_->stop();  // a draining peer is closed by us, not judged by its heartbeats
  if (relay_) relay_->closeAll();  // each child stops its part of the job on the disconnect
  send(makeError("", "agent shutting down"));
  closeAfterFlush("agent shutting down, stopping its jobs");
}

void Session::stop(const std::string& reason) {
  if (stopped_) return;
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
  transition(MemberEvent::Disconnected);
  deadline_.cancel();
  heartbeat_.cancel();
  monitor_->stop();
  connection_->close();
  writeQueue_.clear();
  queuedBytes_ = 0;
  windowed_ = false;  // nobody reads any more: paused pumps resume and their output is dropped
  table_.stopJobsOf(id_, reason.empty() ? "connection closed" : reason);
  // The parent is gone or silent: the children hear it as their parent's disconnect and stop their ranks too.
  if (relay_) relay_->closeAll();
  if (tree_.stores != nullptr) {
    if (storeLink_ != 0) tree_.stores->forgetLink(storeLink_);
    for (const auto& job : storeJobs_) tree_.stores->close(job);
    storeJobs_.clear();
  }
  runDrainedCallbacks();
  manager_.remove(id_);  // may drop the last owning reference; handlers still hold one
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
