#include "agent/child_link.h"

#include "proto/rank_events.h"

#include <algorithm>

#include "agent/tree_edge_signal.h"
#include "common/logging.h"
#include "common/strings.h"

namespace dsrun::agent {
namespace {

/// Its first line: NodeLost.cause is one line, and AgentClient's errors may add a hint line.
std::string firstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

void countRanks(const wire::TreeLaunch& launch, int& ranks) {
  wire::TreeNodePart part;
  for (const auto& node : launch.subtree()) {
    if (part.ParseFromString(node.part())) ranks += part.ranks_size();
  }
}

/// How many levels the subtree has (1: the child alone): the deepest part's ancestors, less the child's own.
uint32_t countLevels(const wire::TreeLaunch& launch) {
  wire::TreeNodePart part;
  int top = -1, deepest = 0;
  for (const auto& node : launch.subtree()) {
    if (!part.ParseFromString(node.part())) continue;
    if (top < 0) top = part.ancestors_size();
    deepest = std::max(deepest, part.ancestors_size());
  }
  return top < 0 ? 1 : static_cast<uint32_t>(deepest - top + 1);
}

}  // namespace

std::shared_ptr<ChildLink> ChildLink::create(boost::asio::io_context& io, boost::asio::ssl::context& dial,
                                             proto::ChildTreeLaunch child, std::string clientName, Timing timing,
                                             Callbacks callbacks) {
  std::shared_ptr<ChildLink> link(new ChildLink(io, std::move(child), timing, std::move(callbacks)));
  std::weak_ptr<ChildLink> weak = link;
  AgentClient::Callbacks cb;
  cb.onReady = [weak](const wire::Welcome& welcome) {
    if (auto self = weak.lock()) self->onReady(welcome);
  };
  cb.onEnvelope = [weak](const wire::Envelope& envelope) {
    if (auto self = weak.lock()) self->onEnvelope(envelope);
  };
  cb.onClosed = [weak](const std::string& reason) {
    if (auto self = weak.lock()) self->onClosed(reason);
  };
  link->client_ = AgentClient::create(io, dial, link->child_.host, static_cast<int>(link->child_.port),
                                      std::move(clientName), std::move(cb));
  link->client_->setDialAddress(link->child_.address);
  link->client_->setHello(timing.outputWindowBytes, true, timing.beatMs, timing.silenceMs);
  // Merged events are read here always: the relay expands them for a parent that did not ask (EventBatcher).
  link->client_->setMergedRankEvents(true);
  link->client_->announceTreeEdgeSignals();  // a child adopted away tells us with TreeReattached
  return link;
}

ChildLink::ChildLink(boost::asio::io_context& io, proto::ChildTreeLaunch child, Timing timing, Callbacks callbacks)
    : io_(io), child_(std::move(child)), timing_(timing), callbacks_(std::move(callbacks)), ack_(io) {
  wire::TreeLaunchHeader header;
  header.ParseFromString(child_.launch.header());
  jobId_ = header.job_id();
  countRanks(child_.launch, expectedRanks_);
  levels_ = countLevels(child_.launch);
}

void ChildLink::start() { client_->connect(timing_.connectTimeout); }

void ChildLink::onReady(const wire::Welcome& welcome) {
  if (done_) return;
  childTyped_ = welcome.tree_edge_signals();
  if (!welcome.tree_launch()) {
    lose(strCat("agent ", client_->address(), ": its dsrun-agent predates tree launches (Welcome.tree_launch unset)"));
    return;
  }
  if (probeTimeoutMs_ > 0 && !welcome.tree_probe()) {
    // It would start at once: it gets the plain launch at go(), and its subtree is only probed, not probing.
    heldBack_ = true;
    if (callbacks_.onProbe) callbacks_.onProbe(nullptr, static_cast<uint64_t>(child_.launch.subtree_size()));
  } else {
    sendLaunch(probeTimeoutMs_ > 0);
  }
  // Three periods per budget, as the Session judges its launcher: one late beat is tolerated.
  const auto period = std::chrono::milliseconds(std::max<uint32_t>(1, timing_.silenceMs / 3));
  monitor_ = std::make_unique<HeartbeatMonitor>(io_, period, 3, [weak = weak_from_this()] {
    auto self = weak.lock();  // held: the loss report may drop the owner's reference
    if (!self) return;
    self->lose(strCat("agent ", self->client_->address(), ": silent for ", self->timing_.silenceMs,
                      " ms (heartbeat budget; network down or host hung)"));
  }, [weak = weak_from_this()](int) {
    // The child's bytes waiting unread in our socket: this loop is behind (spawning, other children's
    // handshakes, a starved CPU), not the child silent -- as dsrun judges its agents (AgentChannel::silentAt).
    // At 256 agents on 2 loaded cores a parent gave a live child up (docs/benchmarks.md "Launch at scale").
    auto self = weak.lock();
    if (self && self->client_->bytesWaiting() > 0) self->monitor_->beat();
  });
  monitor_->start();
  client_->beatEvery(std::chrono::milliseconds(timing_.beatMs));
}

void ChildLink::sendLaunch(bool probe) {
  wire::Envelope envelope;
  wire::TreeLaunch* launch =
      adopt_ ? envelope.mutable_tree_adopt()->mutable_launch() : envelope.mutable_tree_launch();
  *launch = child_.launch;
  if (probe) launch->mutable_probe()->set_timeout_ms(probeTimeoutMs_);
  client_->send(envelope);
  launched_ = true;
  if (callbacks_.onLaunched) callbacks_.onLaunched();
  // The silence budget again: a child that beats but never answers its launch is as lost as a silent one. A
  // probed launch is answered by the probe report, which waits for every level's probe below the child.
  const uint64_t ackMs = timing_.silenceMs + (probe ? uint64_t{probeTimeoutMs_} * levels_ : 0);
  armAck(ackMs, 0);
  for (int signal : std::exchange(pendingSignals_, {})) this->signal(signal);
}

void ChildLink::armAck(uint64_t ackMs, int extensions) {
  ack_.expires_after(std::chrono::milliseconds(ackMs));
  ack_.async_wait([weak = weak_from_this(), ackMs, extensions](const boost::system::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self || self->done_ || self->acknowledged_) return;
    // Its answer may wait unread in our socket while this loop is behind (a starved CPU): then we are late, not
    // the child a straggler -- judged again, a bounded number of times, as the silence budget is.
    if (extensions < kAckExtensions && self->client_->bytesWaiting() > 0) return self->armAck(ackMs, extensions + 1);
    self->lose(strCat("agent ", self->client_->address(), ": did not acknowledge its ",
                      self->adopt_ ? "adoption" : "launch", " within ", ackMs * (extensions + 1),
                      " ms (a straggler; heartbeat budget)"));
  });
}

void ChildLink::holdForProbe(uint32_t timeoutMs) { probeTimeoutMs_ = std::max<uint32_t>(1, timeoutMs); }

void ChildLink::go() {
  if (done_ || probeTimeoutMs_ == 0) return;
  if (heldBack_) {
    heldBack_ = false;
    sendLaunch(false);
    return;
  }
  wire::Envelope go;
  go.mutable_tree_go()->set_job_id(jobId_);
  client_->send(go);
}

void ChildLink::onEnvelope(const wire::Envelope& envelope) {
  if (done_) return;
  if (monitor_) monitor_->beat();
  if (envelope.has_heartbeat()) return;
  if (envelope.has_error() && !envelope.error().job_id().empty() && envelope.error().unstarted_ranks().empty() &&
      !startsWith(envelope.error().message(), "signal refused")) {
    // The child refused its launch, adoption or go: it will start and report nothing of its subtree, so it is
    // lost (its children are re-fanned from here). Passed up as it came, the refusal read at dsrun as the root's
    // own, and nothing ended the ranks below it (docs/benchmarks.md "Launch at scale": a hung dsrun).
    lose(strCat("agent ", client_->address(), ": ", firstLine(envelope.error().message())));
    return;
  }
  acknowledged();
  if (envelope.has_tree_adopted()) return;  // for this edge only
  if (edgeSignalOf(envelope, childTyped_) == EdgeSignal::Reattached) {
    // An ancestor (or dsrun) adopted the child while this edge still stood (this node was cut off above):
    // the subtree is supervised from there, so this is no loss and nothing to re-fan.
    DSRUN_LOG(INFO) << "tree child " << child_.host << " of job " << jobId_ << ": re-attached to an ancestor";
    close(false);
    return;
  }
  if (envelope.has_tree_probe_report()) {
    if (callbacks_.onProbe) callbacks_.onProbe(&envelope.tree_probe_report(), 0);
    return;
  }
  if (envelope.has_store_request()) {
    // The child's ranks' rendezvous: answered by this agent's store, never relayed up as an event.
    if (callbacks_.onStore) callbacks_.onStore(envelope.store_request());
    return;
  }
  if (envelope.has_error() && envelope.error().job_id().empty()) {
    // Connection-level: the child's agent closes after it ("agent shutting down", a protocol error).
    lose(strCat("agent ", client_->address(), ": ", firstLine(envelope.error().message())));
    return;
  }
  // Ranks that ended, or that a spawn failure says will never start: once all have, a hang-up loses nothing.
  for (int rank : proto::endedRanks(envelope)) exitedRanks_.insert(rank);
  if (callbacks_.onEvent) callbacks_.onEvent(envelope);
}

void ChildLink::onClosed(const std::string& reason) {
  if (done_) return;
  if (launched_ && static_cast<int>(exitedRanks_.size()) >= expectedRanks_) {
    // Every rank below has exited and been reported: a hang-up now (the child's agent restarted) loses nothing.
    DSRUN_LOG(INFO) << "tree child " << child_.host << " of job " << jobId_ << ": " << firstLine(reason);
    close();
    return;
  }
  lose(firstLine(reason));
}

void ChildLink::lose(const std::string& cause) {
  if (done_) return;
  DSRUN_LOG(WARN) << "tree child " << child_.host << " of job " << jobId_ << " lost: " << cause;
  auto onLost = callbacks_.onLost;
  close();
  if (onLost) onLost(cause);
}

void ChildLink::signal(int signal) {
  if (done_) return;
  if (!launched_) {
    pendingSignals_.push_back(signal);
    return;
  }
  wire::Envelope e;
  e.mutable_signal()->set_job_id(jobId_);
  e.mutable_signal()->set_signal(signal);
  client_->send(e);
}

void ChildLink::credit(uint64_t bytes) {
  if (done_ || bytes == 0) return;
  client_->sendCredit(bytes);
}

void ChildLink::acknowledged() {
  if (acknowledged_) return;
  acknowledged_ = true;
  ack_.cancel();
}

void ChildLink::send(const wire::Envelope& envelope) {
  if (!done_) client_->send(envelope);
}

void ChildLink::close(bool release, bool jobEnds) {
  if (done_) return;
  done_ = true;
  if (monitor_) monitor_->stop();
  ack_.cancel();
  if (release && launched_) {
    // Connection-level: the child's Session ends at once, without waiting for an adopter.
    client_->send(releasedMessage(jobId_, childTyped_, jobEnds));
    client_->closeAfterFlush();
    return;
  }
  client_->close();
}

}  // namespace dsrun::agent
