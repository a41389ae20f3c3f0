#pragma once
// TreeRelay: a Session's side of the tree launches it accepted (docs/agent.md "Tree launch"). It dials every
// child of each job at once (ChildLink), passes what comes up from them and from this node's own ranks to the
// parent in batches (EventBatcher), reports a child that is lost as NodeLost{job, host, cause}, sends signals
// to every child of a job in the same pass as this node's own ranks get them, and returns output credit to a
// child only as the parent returns it for that child's bytes (CreditLedger), so that a child's output is read
// no faster than the parent passes it up. A lost child costs only itself: its children are re-fanned from here
// (adopted with the slices the child would have sent them), so only its own ranks are lost. Owned by its
// Session (handed to the adopter's Session when this node is adopted). Loop-thread only.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
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
    std::function<bool()> merged;                     ///< the parent reads merged rank events (null: no)
  };

  /// `dial` (a tls::Role::TreeClient context) must outlive the relay.
  TreeRelay(boost::asio::io_context& io, boost::asio::ssl::context& dial, std::string clientName, Upstream upstream,
            StoreService* stores = nullptr);
  ~TreeRelay();

  /// A probed launch (TreeLaunch.probe): how long each target may take, and where each child's answer goes:
  /// its report, or nullptr with the nodes of an older child that is only probed, or nullptr and 0 when the
  /// child was lost (its NodeLost is queued up before this is called).
  struct ChildProbe {
    uint32_t timeoutMs = 0;
    std::function<void(size_t child, const wire::TreeProbeReport* report, uint64_t unprobedNodes)> onChild;
  };

  /// Dials each of `children` of job `jobId` at once and sends each its subtree launch. Each child's window
  /// is an equal share of `window` (at least 64 KiB), so the whole subtree has at most about one window of
  /// output in flight towards this node. With `probe`, the children hold their ranks until go(jobId).
  /// `forwarded` runs once (posted) when every child has been sent its launch or is lost; at once without
  /// children.
  void forward(const std::string& jobId, std::vector<proto::ChildTreeLaunch> children, ChildLink::Timing timing,
               std::optional<ChildProbe> probe = std::nullopt, std::function<void()> forwarded = {});
  /// The probe of `jobId` passed: every child of it starts (ChildLink::go).
  void go(const std::string& jobId);
  /// Sends what is queued for the parent now (a probe report must follow the NodeLost events before it).
  void flush();
  /// This node was adopted: events go to `upstream` from now on, starting with every end already passed up
  /// (RankExited, a spawn failure's unstarted ranks, NodeLost), since those in flight through the lost parent
  /// died with it and the launcher ignores an end it already has. Output credit the lost parent owed for the
  /// children's bytes is returned to them (those bytes reached it or died with it; either way it is spent).
  void rebind(Upstream upstream);
  /// Queues one event for the parent; what is queued in one turn of the loop leaves as one batch.
  void up(const wire::Envelope& event);
  /// Sends `signal` to every child of `jobId` (none: nothing).
  void signal(const std::string& jobId, int signal);
  /// The job is stopped here (an orphan gave up waiting): SIGTERM to every child of `jobId` now, and to every
  /// child re-fanned from here later (a child lost before it passed the stop on leaves its children running).
  void stop(const std::string& jobId);
  /// Some child link is open: part of the subtree may still run below this node.
  bool active() const { return !children_.empty(); }
  /// The parent returned `bytes` of output credit.
  void credited(uint64_t bytes);
  /// Closes every child link without reporting losses. `release`: the job ends here, the children stop at
  /// once; otherwise (this node was given up or is shutting down) they wait for an adopter.
  void closeAll(bool release = true);

 private:
  struct Child {
    std::string jobId;
    std::shared_ptr<ChildLink> link;
    ChildLink::Timing timing;  ///< its edge's; its children get the same if it is lost
    uint32_t probeTimeoutMs = 0;  ///< held for a probe (0: not); its children are held too if it is lost
  };
  void relay(uint64_t source, const wire::Envelope& event);
  /// Keeps a copy of the ends in `event` (or in the batch it is) for rebind().
  void rememberEnds(const wire::Envelope& event);
  /// Dials `children` (an adoption when `adopt`; held for a probe with `probe`); each child's window is
  /// `timing`'s.
  void dial(const std::string& jobId, std::vector<proto::ChildTreeLaunch> children, ChildLink::Timing timing,
            bool adopt, std::optional<ChildProbe> probe, std::function<void(uint64_t source)> settle = {});
  /// `lost`'s children, adopted from here with the launches it would have sent them.
  void refan(const std::string& jobId, const std::string& lostHost, const Child& lost);

  boost::asio::io_context& io_;      ///< the agent's loop
  boost::asio::ssl::context& dial_;  ///< this node's certificate as a client
  std::string clientName_;           ///< in the children's logs
  Upstream upstream_;                ///< the parent
  std::map<uint64_t, Child> children_;  ///< by source id (CreditLedger), ids from 1
  std::set<std::string> went_;          ///< jobs whose probe passed (TreeGo): a re-fanned child is not held
  std::set<std::string> stopped_;       ///< jobs stopped here (stop()): a re-fanned child is stopped too
  uint64_t nextSource_ = 1;          ///< never reused
  CreditLedger ledger_;              ///< whose output the parent's credit returns
  EventBatcher batcher_;             ///< events waiting for the end of this turn of the loop
  std::vector<wire::Envelope> ends_;  ///< every end passed up (one small message per rank of the subtree)
  std::shared_ptr<bool> alive_;      ///< cleared on destruction: a posted flush then does nothing
  StoreService* stores_;             ///< answers the children's store traffic (null: none served)
};

}  // namespace dsrun::agent
