#include "agent/tree_relay.h"

#include <algorithm>
#include <csignal>
#include <set>
#include <boost/asio/post.hpp>

#include "agent/store_service.h"
#include "common/error.h"
#include "common/logging.h"
#include "tls/tree_signature.h"

namespace dsrun::agent {
namespace {

/// The smallest window a child gets, however many siblings share its parent's: one LogPump chunk.
constexpr uint64_t kMinChildWindow = 64 * 1024;

}  // namespace

TreeRelay::TreeRelay(boost::asio::io_context& io, boost::asio::ssl::context& dial, std::string clientName,
                     Upstream upstream, StoreService* stores)
    : io_(io),
      dial_(dial),
      clientName_(std::move(clientName)),
      upstream_(std::move(upstream)),
      alive_(std::make_shared<bool>(true)),
      stores_(stores) {}

TreeRelay::~TreeRelay() {
  *alive_ = false;
  closeAll();
}

void TreeRelay::forward(const std::string& jobId, std::vector<proto::ChildTreeLaunch> children,
                        ChildLink::Timing timing, std::optional<ChildProbe> probe,
                        std::function<void()> forwarded) {
  if (children.empty()) {
    if (forwarded) boost::asio::post(io_, [alive = alive_, forwarded] {
      if (*alive) forwarded();
    });
    return;
  }
  auto left = std::make_shared<size_t>(children.size());
  auto settled = std::make_shared<std::set<uint64_t>>();
  auto settle = [this, left, settled, forwarded, alive = alive_](uint64_t source) {
    if (!settled->insert(source).second || --*left > 0 || !forwarded) return;
    boost::asio::post(io_, [alive, forwarded] {
      if (*alive) forwarded();
    });
  };
  timing.outputWindowBytes = std::max(kMinChildWindow, timing.outputWindowBytes / children.size());
  DSRUN_LOG(INFO) << "job " << jobId << ": dialing " << children.size() << " tree child(ren)";
  dial(jobId, std::move(children), timing, false, std::move(probe), std::move(settle));
}

void TreeRelay::dial(const std::string& jobId, std::vector<proto::ChildTreeLaunch> children,
                     ChildLink::Timing timing, bool adopt, std::optional<ChildProbe> probe,
                     std::function<void(uint64_t source)> settle) {
  std::vector<std::shared_ptr<ChildLink>> started;
  for (size_t index = 0; index < children.size(); ++index) {
    proto::ChildTreeLaunch& child = children[index];
    const uint64_t source = nextSource_++;
    const std::string host = child.host;
    ChildLink::Callbacks callbacks;
    callbacks.onEvent = [this, source](const wire::Envelope& event) { relay(source, event); };
    const uint64_t storeLink = stores_ != nullptr ? stores_->newLinkId() : 0;
    auto self = std::make_shared<std::weak_ptr<ChildLink>>();  // the link, once made: where store replies go
    if (stores_ != nullptr) {
      stores_->bindLink(storeLink, jobId);  // the child's edge carries its launch's job, no other
      callbacks.onStore = [this, storeLink, self](const wire::StoreRequest& request) {
        stores_->fromBelow(storeLink, request, [self](const wire::Envelope& e) {
          if (auto link = self->lock()) link->send(e);
        });
      };
    }
    if (settle) callbacks.onLaunched = [settle, source] { settle(source); };
    auto onChildProbe = probe ? probe->onChild : nullptr;
    callbacks.onLost = [this, source, jobId, host, index, onChildProbe, settle, storeLink](const std::string& cause) {
      if (settle) settle(source);
      if (stores_ != nullptr) stores_->forgetLink(storeLink);
      ledger_.forget(source);
      auto it = children_.find(source);
      if (it == children_.end()) return;
      const Child lost = std::move(it->second);
      children_.erase(it);
      wire::Envelope e;
      e.mutable_node_lost()->set_job_id(jobId);
      e.mutable_node_lost()->set_host(host);
      e.mutable_node_lost()->set_cause(cause);
      up(e);
      if (onChildProbe) onChildProbe(index, nullptr, 0);  // after the NodeLost: a report then follows it
      refan(jobId, host, lost);
    };
    if (onChildProbe) {
      callbacks.onProbe = [onChildProbe, index](const wire::TreeProbeReport* report, uint64_t unprobed) {
        onChildProbe(index, report, unprobed);
      };
    }
    auto link = ChildLink::create(io_, dial_, std::move(child), clientName_, timing, std::move(callbacks));
    *self = link;
    if (adopt) link->adopt();
    const uint32_t probeTimeoutMs = probe ? probe->timeoutMs : 0;
    if (probe) link->holdForProbe(probeTimeoutMs);
    children_[source] = Child{jobId, link, timing, probeTimeoutMs};
    started.push_back(link);
  }
  // All at once: the handshakes overlap, so a node's children cost one round of connect + TLS, not width.
  for (auto& link : started) link->start();
}

void TreeRelay::refan(const std::string& jobId, const std::string& lostHost, const Child& lost) {
  // This node forwarded the lost child's subtree, so it holds what the child would have sent each of its
  // children, signed by dsrun: the same cut (childTreeLaunches) gives them the same bytes.
  std::vector<proto::ChildTreeLaunch> orphans;
  const wire::TreeLaunch& launch = lost.link->launch();
  try {
    const proto::Sha256 sha = [](std::string_view data) { return tls::sha256(data); };
    orphans = proto::childTreeLaunches(launch, proto::readTreeLaunch(launch, sha));
  } catch (const Error& e) {
    DSRUN_LOG(WARN) << "job " << jobId << ": cannot re-fan the children of " << lostHost << ": " << e.what();
    return;
  }
  if (orphans.empty()) return;
  DSRUN_LOG(INFO) << "job " << jobId << ": adopting " << orphans.size() << " child(ren) of the lost " << lostHost;
  // Each keeps the window it had below the lost node's share: the subtree's output in flight stays bounded.
  ChildLink::Timing timing = lost.timing;
  timing.outputWindowBytes = std::max(kMinChildWindow, timing.outputWindowBytes / orphans.size());
  // Lost while its probe was under way: the orphans hold their ranks too (the loss already answered for the
  // subtree's probe; dsrun ends or re-forms the launch, or goes, and they follow).
  std::optional<ChildProbe> held;
  if (lost.probeTimeoutMs > 0 && went_.count(jobId) == 0) held = ChildProbe{lost.probeTimeoutMs, nullptr};
  const size_t first = nextSource_;
  dial(jobId, std::move(orphans), timing, true, std::move(held));
  if (stopped_.count(jobId) == 0) return;
  // Queued until each has its adoption; one that got the stop from the lost node may get it twice.
  for (auto it = children_.lower_bound(first); it != children_.end(); ++it) it->second.link->signal(SIGTERM);
}

void TreeRelay::rebind(Upstream upstream) {
  upstream_ = std::move(upstream);
  credited(ledger_.outstanding());
  bool queued = false;
  for (const auto& end : ends_) queued = batcher_.add(end) || queued;
  if (queued) {
    boost::asio::post(io_, [this, alive = alive_] {
      if (*alive) flush();
    });
  }
}

void TreeRelay::rememberEnds(const wire::Envelope& event) {
  if (event.has_event_batch()) {
    for (const auto& inner : event.event_batch().events()) rememberEnds(inner);
    return;
  }
  if (event.has_rank_exited() || event.has_ranks_exited() || event.has_node_lost() ||
      (event.has_error() && event.error().unstarted_ranks_size() > 0)) {
    ends_.push_back(event);
  }
}

void TreeRelay::relay(uint64_t source, const wire::Envelope& event) {
  const uint64_t bytes = outputBytes(event);
  if (bytes > 0) {
    if (upstream_.windowed && upstream_.windowed()) {
      ledger_.sent(source, bytes);
    } else if (auto it = children_.find(source); it != children_.end()) {
      // A parent without a window returns no credit: only the parent's connection holds the child back.
      it->second.link->credit(bytes);
    }
  }
  up(event);
}

void TreeRelay::up(const wire::Envelope& event) {
  rememberEnds(event);
  if (!batcher_.add(event)) return;
  boost::asio::post(io_, [this, alive = alive_] {
    if (*alive) flush();
  });
}

void TreeRelay::flush() {
  for (const auto& envelope : batcher_.take(upstream_.merged && upstream_.merged())) upstream_.send(envelope);
}

void TreeRelay::go(const std::string& jobId) {
  went_.insert(jobId);
  for (auto& [source, child] : children_) {
    if (child.jobId == jobId) child.link->go();
  }
}

void TreeRelay::signal(const std::string& jobId, int signal) {
  for (auto& [source, child] : children_) {
    if (child.jobId == jobId) child.link->signal(signal);
  }
}

void TreeRelay::stop(const std::string& jobId) {
  stopped_.insert(jobId);
  signal(jobId, SIGTERM);
}

void TreeRelay::credited(uint64_t bytes) {
  for (const auto& [source, owed] : ledger_.credited(bytes)) {
    auto it = children_.find(source);
    if (it != children_.end()) it->second.link->credit(owed);
  }
}

void TreeRelay::closeAll(bool release) {
  auto all = std::exchange(children_, {});
  // Released here, the job ends in the children's whole subtrees: they release theirs too.
  for (auto& [source, child] : all) child.link->close(release, /*jobEnds=*/release);
}

}  // namespace dsrun::agent
