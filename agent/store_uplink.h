#pragma once
// StoreUplink: the connection of an agent with no agent above it in the launch (the star, or a tree root other
// than rank 0's node) to the agent of rank 0's node, for one job's store traffic (docs/rendezvous.md). Dials it
// with this node's certificate (tls::Role::TreeClient: the root's agent accepts StoreRequests only from a node
// certificate of the cluster), queues what the hub sends until the root has welcomed it, beats as the root's
// session expects, hands StoreReplys to the hub, and tells the hub once when the connection is gone.
// Loop-thread only; handlers hold weak references.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>
#include <vector>

#include "client/agent_client.h"
#include "proto/agent.pb.h"

namespace dsrun::agent {

class StoreHub;

class StoreUplink : public std::enable_shared_from_this<StoreUplink> {
 public:
  /// `hub` must outlive the link or close() it first; `dial` outlives it.
  static std::shared_ptr<StoreUplink> create(boost::asio::io_context& io, boost::asio::ssl::context& dial,
                                             const wire::StoreRendezvous& root, std::string clientName, StoreHub& hub);
  void send(const wire::Envelope& envelope);
  /// Closes without telling the hub.
  void close();

 private:
  explicit StoreUplink(StoreHub& hub) : hub_(hub) {}

  StoreHub& hub_;
  std::shared_ptr<AgentClient> client_;
  std::vector<wire::Envelope> queued_;  ///< sent before the root's Welcome
  bool ready_ = false;
  bool done_ = false;
};

}  // namespace dsrun::agent
