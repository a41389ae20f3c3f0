#pragma once
// ChildLink: this agent's edge to one child in a tree launch. Dials the child's agent with this node's own
// certificate (tls::Role::TreeClient; the child must present a node certificate naming the host the launch
// gives it), says Hello asking for heartbeats and an output window, sends the child's subtree launch, and
// then passes the subtree's events to `onEvent` as they come (batches unopened), signals down, and output
// credit down as the parent returns it. A child that cannot be reached, refuses, disconnects before its
// subtree's ranks have all exited, or is silent for the silence budget is reported once through `onLost`
// with one line, and the link closes (the child then stops its ranks, as for a lost launcher). So is a child
// that does not acknowledge its launch (its first event, or TreeAdopted) within the silence budget: a
// straggler that welcomed us and then hung. In adoption mode (adopt()) the link re-attaches an orphaned node
// with TreeAdopt instead of starting it with TreeLaunch (docs/agent.md "An interior agent dies").
// Loop-thread only; handlers hold weak references, so dropping the last shared_ptr after close() is safe.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "agent/heartbeat_monitor.h"
#include "client/agent_client.h"
#include "proto/tree_launch_expander.h"

namespace dsrun::agent {

class ChildLink : public std::enable_shared_from_this<ChildLink> {
 public:
  struct Timing {
    std::chrono::milliseconds connectTimeout{10000};  ///< connect + TLS + Welcome
    uint32_t beatMs = 500;         ///< our heartbeat to the child, and the interval we ask of the child's
    uint32_t silenceMs = 2500;     ///< either side gives the other up after this long without a message
    uint64_t outputWindowBytes = 2u << 20;  ///< the child's output window towards this agent
  };
  struct Callbacks {
    std::function<void(const wire::Envelope&)> onEvent;   ///< an event (or EventBatch) of the subtree
    std::function<void(const std::string& cause)> onLost;  ///< at most once; never after close()
    /// After holdForProbe: the child's TreeProbeReport, or nullptr (once) when its agent predates the tree
    /// probe and holds `unprobedNodes` nodes that are only probed. Not called for a child that is lost.
    std::function<void(const wire::TreeProbeReport* report, uint64_t unprobedNodes)> onProbe;
    std::function<void()> onLaunched;  ///< once, when the subtree launch has been sent (optional)
    std::function<void(const wire::StoreRequest&)> onStore;  ///< the child's store traffic (docs/rendezvous.md)
  };

  /// `dial` is a TreeClient context that outlives the link; `clientName` goes into the child's log.
  static std::shared_ptr<ChildLink> create(boost::asio::io_context& io, boost::asio::ssl::context& dial,
                                           proto::ChildTreeLaunch child, std::string clientName, Timing timing,
                                           Callbacks callbacks);

  /// Sends the launch as a TreeAdopt (this agent adopts the node after its parent was lost). Before start().
  void adopt() { adopt_ = true; }
  /// Dials the child; the subtree launch goes out once it has welcomed us.
  void start();
  /// Before start(): the launch goes out with TreeLaunch.probe (the child holds its ranks until go()); a child
  /// that predates the tree probe gets the plain launch only at go().
  void holdForProbe(uint32_t timeoutMs);
  /// The probe passed: TreeGo to the child (or its held-back plain launch).
  void go();
  /// Sends `signal` for the job to the child (queued until the launch has gone out).
  void signal(int signal);
  /// Returns `bytes` of the child's output window (the parent passed that much of its output on).
  void credit(uint64_t bytes);
  /// Sends one message to the child (a StoreReply; dropped once closed or lost).
  void send(const wire::Envelope& envelope);
  /// Closes without reporting a loss. `release`: tells the child first that nobody will adopt it, so it stops the
  /// job's ranks at once; otherwise it waits a while for an adopter. `jobEnds` (with `release`): the job ends in
  /// the child's whole subtree, so the child releases its own children too; otherwise the child alone was given
  /// up and this node re-fans its children.
  void close(bool release = true, bool jobEnds = false);

  const std::string& host() const { return child_.host; }
  const std::string& jobId() const { return jobId_; }
  /// The child's subtree launch: what its children's launches are cut from if the child is lost.
  const wire::TreeLaunch& launch() const { return child_.launch; }

 private:
  /// How many times the launch's acknowledgement deadline is extended while the child's bytes wait unread.
  static constexpr int kAckExtensions = 3;
  /// The acknowledgement deadline (`ackMs`), judged again while the child's bytes wait unread.
  void armAck(uint64_t ackMs, int extensions);
  ChildLink(boost::asio::io_context& io, proto::ChildTreeLaunch child, Timing timing, Callbacks callbacks);
  void onReady(const wire::Welcome& welcome);
  void onEnvelope(const wire::Envelope& envelope);
  void sendLaunch(bool probe);
  void onClosed(const std::string& reason);
  void lose(const std::string& cause);
  void acknowledged();

  boost::asio::io_context& io_;             ///< the agent's loop
  proto::ChildTreeLaunch child_;            ///< where to dial, what to send
  Timing timing_;                           ///< injected durations and window
  Callbacks callbacks_;                     ///< where events and the loss go
  std::string jobId_;                       ///< the launch's job id
  int expectedRanks_ = 0;                   ///< ranks in the child's subtree
  /// Ranks it reported ended (or never started), each once: an adoption below re-sends the ends it passed up
  /// before, so a count would reach expectedRanks_ early and a later loss pass for a clean hang-up. All of them:
  /// a later hang-up is no loss.
  std::set<int> exitedRanks_;
  std::shared_ptr<AgentClient> client_;     ///< the connection to the child's agent
  std::unique_ptr<HeartbeatMonitor> monitor_;  ///< the child's silence, from its Welcome on
  boost::asio::steady_timer ack_;           ///< the child's deadline to acknowledge its launch
  std::vector<int> pendingSignals_;         ///< signals asked for before the launch went out
  bool launched_ = false;                   ///< the subtree launch was sent
  uint32_t probeTimeoutMs_ = 0;             ///< holdForProbe's; 0: no probe
  bool heldBack_ = false;                   ///< an older child's plain launch waits for go()
  uint32_t levels_ = 1;                     ///< the child's subtree's depth (its probe reports wait for all)
  bool acknowledged_ = false;               ///< the child answered the launch (an event, or TreeAdopted)
  bool adopt_ = false;                      ///< the launch goes as a TreeAdopt
  bool childTyped_ = false;                 ///< the child's Welcome.tree_edge_signals (else: the older Error texts)
  bool done_ = false;                       ///< closed or lost: nothing more is reported
};

}  // namespace dsrun::agent
