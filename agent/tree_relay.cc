#include "agent/tree_relay.h"

#include <algorithm>
#include <boost/asio/post.hpp>

#include "agent/store_service.h"
#include "common/logging.h"

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
                        ChildLink::Timing timing) {
  if (children.empty()) return;
  timing.outputWindowBytes = std::max(kMinChildWindow, timing.outputWindowBytes / children.size());
  std::vector<std::shared_ptr<ChildLink>> started;
  for (auto& child : children) {
    const uint64_t source = nextSource_++;
    const std::string host = child.host;
    ChildLink::Callbacks callbacks;
    callbacks.onEvent = [this, source](const wire::Envelope& event) { relay(source, event); };
    const uint64_t storeLink = stores_ != nullptr ? stores_->newLinkId() : 0;
    auto self = std::make_shared<std::weak_ptr<ChildLink>>();  // the link, once made: where store replies go
    if (stores_ != nullptr) {
      callbacks.onStore = [this, storeLink, self](const wire::StoreRequest& request) {
        stores_->fromBelow(storeLink, request, [self](const wire::Envelope& e) {
          if (auto link = self->lock()) link->send(e);
        });
      };
    }
    callbacks.onLost = [this, source, jobId, host, storeLink](const std::string& cause) {
      if (stores_ != nullptr) stores_->forgetLink(storeLink);
      ledger_.forget(source);
      children_.erase(source);
      wire::Envelope lost;
      lost.mutable_node_lost()->set_job_id(jobId);
      lost.mutable_node_lost()->set_host(host);
      lost.mutable_node_lost()->set_cause(cause);
      up(lost);
    };
    auto link = ChildLink::create(io_, dial_, std::move(child), clientName_, timing, std::move(callbacks));
    *self = link;
    children_[source] = Child{jobId, link};
    started.push_back(link);
  }
  DSRUN_LOG(INFO) << "job " << jobId << ": dialing " << started.size() << " tree child(ren)";
  // All at once: the handshakes overlap, so a node's children cost one round of connect + TLS, not width.
  for (auto& link : started) link->start();
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
  if (!batcher_.add(event)) return;
  boost::asio::post(io_, [this, alive = alive_] {
    if (*alive) flush();
  });
}

void TreeRelay::flush() {
  for (const auto& envelope : batcher_.take()) upstream_.send(envelope);
}

void TreeRelay::signal(const std::string& jobId, int signal) {
  for (auto& [source, child] : children_) {
    if (child.jobId == jobId) child.link->signal(signal);
  }
}

void TreeRelay::credited(uint64_t bytes) {
  for (const auto& [source, owed] : ledger_.credited(bytes)) {
    auto it = children_.find(source);
    if (it != children_.end()) it->second.link->credit(owed);
  }
}

void TreeRelay::closeAll() {
  auto all = std::exchange(children_, {});
  for (auto& [source, child] : all) child.link->close();
}

}  // namespace dsrun::agent
