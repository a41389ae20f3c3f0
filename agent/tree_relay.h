#pragma once
// TreeRelay: a Session's side of the tree launches it accepted (docs/agent.md "Tree launch"). It dials every
// child of each job at once (ChildLink), passes what comes up from them and from this node's own ranks to the
// parent in batches (EventBatcher), reports a child that is lost as NodeLost{job, host, cause}, sends signals
// to every child of a job in the same pass as this node's own ranks get them, and returns output credit to a
// child only as the parent returns it for that child's bytes (CreditLedger), so that a child's output is read
// no faster than the parent passes it up. Owned by its Session. Loop-thread only.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/child_link.h"
#include "agent/credit_ledger.h"
#include "agent/event_batcher.h"

namespace dsrun::agent {

class StoreService;

class TreeRelay {
 public:
  /// What the relay needs of the parent's Session.
  struct Upstream {
    std::function<void(const wire::Envelope&)> send;  ///< one message to the parent
    std::function<bool()> windowed;                   ///< the parent returns output credit
  };

  /// `dial` (a tls::Role::TreeClient context) must outlive the relay.
  TreeRelay(boost::asio::io_context& io, boost::asio::ssl::context& dial, std::string clientName, Upstream upstream,
            StoreService* stores = nullptr);
  ~TreeRelay();

  /// Dials each of `children` of job `jobId` at once and sends each its subtree launch. Each child's window
  /// is an equal share of `window` (at least 64 KiB), so the whole subtree has at most about one window of
  /// output in flight towards this node.
  void forward(const std::string& jobId, std::vector<proto::ChildTreeLaunch> children, ChildLink::Timing timing);
  /// Queues one event for the parent; what is queued in one turn of the loop leaves as one batch.
  void up(const wire::Envelope& event);
  /// Sends `signal` to every child of `jobId` (none: nothing).
  void signal(const std::string& jobId, int signal);
  /// The parent returned `bytes` of output credit.
  void credited(uint64_t bytes);
  /// Closes every child link without reporting losses (the parent is gone or this node is shutting down).
  void closeAll();

 private:
  struct Child {
    std::string jobId;
    std::shared_ptr<ChildLink> link;
  };
  void relay(uint64_t source, const wire::Envelope& event);
  void flush();

  boost::asio::io_context& io_;      ///< the agent's loop
  boost::asio::ssl::context& dial_;  ///< this node's certificate as a client
  std::string clientName_;           ///< in the children's logs
  Upstream upstream_;                ///< the parent
  std::map<uint64_t, Child> children_;  ///< by source id (CreditLedger), ids from 1
  uint64_t nextSource_ = 1;          ///< never reused
  CreditLedger ledger_;              ///< whose output the parent's credit returns
  EventBatcher batcher_;             ///< events waiting for the end of this turn of the loop
  std::shared_ptr<bool> alive_;      ///< cleared on destruction: a posted flush then does nothing
  StoreService* stores_;             ///< answers the children's store traffic (null: none served)
};

}  // namespace dsrun::agent
