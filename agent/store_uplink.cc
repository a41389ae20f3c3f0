#include "agent/store_uplink.h"

#include <algorithm>

#include "agent/store_hub.h"
#include "common/logging.h"
#include "common/strings.h"

namespace dsrun::agent {

std::shared_ptr<StoreUplink> StoreUplink::create(boost::asio::io_context& io, boost::asio::ssl::context& dial,
                                                 const wire::StoreRendezvous& root, std::string clientName,
                                                 StoreHub& hub) {
  std::shared_ptr<StoreUplink> link(new StoreUplink(hub));
  std::weak_ptr<StoreUplink> weak = link;
  AgentClient::Callbacks cb;
  cb.onReady = [weak](const wire::Welcome& welcome) {
    auto self = weak.lock();
    if (!self || self->done_) return;
    self->ready_ = true;
    // Half the root session's period: one late beat never costs a miss.
    for (const auto& e : std::exchange(self->queued_, {})) self->client_->send(e);
    self->client_->beatEvery(std::chrono::milliseconds(welcome.heartbeat_period_ms() / 2));
  };
  cb.onEnvelope = [weak](const wire::Envelope& envelope) {
    auto self = weak.lock();
    if (!self || self->done_) return;
    if (envelope.has_store_reply()) {
      if (envelope.store_reply().job_id() == self->hub_.jobId()) {
        self->hub_.fromAbove(envelope.store_reply());
      } else {  // this connection was dialled for one job: another job's reply is not ours to apply
        DSRUN_LOG(WARN) << "job " << self->hub_.jobId() << " store: ignored a reply for job '"
                        << envelope.store_reply().job_id() << "' from the root's agent " << self->client_->address();
      }
    }
    if (envelope.has_error()) {
      DSRUN_LOG(WARN) << "job " << self->hub_.jobId() << " store: the root's agent " << self->client_->address()
                      << " says: " << envelope.error().message();
    }
  };
  cb.onClosed = [weak](const std::string& reason) {
    auto self = weak.lock();
    if (!self || self->done_) return;
    self->done_ = true;
    self->hub_.lostAbove(strCat("the store's root ", reason));
  };
  link->client_ = AgentClient::create(io, dial, root.root_host(), static_cast<int>(root.root_port()),
                                      std::move(clientName), std::move(cb));
  if (!root.root_address().empty()) link->client_->setDialAddress(root.root_address());
  link->client_->connect(std::chrono::milliseconds(10000));
  return link;
}

void StoreUplink::send(const wire::Envelope& envelope) {
  if (done_) return;
  if (!ready_) {
    queued_.push_back(envelope);
    return;
  }
  client_->send(envelope);
}

void StoreUplink::close() {
  if (done_) return;
  done_ = true;
  client_->close();
}

}  // namespace dsrun::agent
