#pragma once
// ChildLink: this agent's edge to one child in a tree launch. Dials the child's agent with this node's own
// certificate (tls::Role::TreeClient; the child must present a node certificate naming the host the launch
// gives it), says Hello asking for heartbeats and an output window, sends the child's subtree launch, and
// then passes the subtree's events to `onEvent` as they come (batches unopened), signals down, and output
// credit down as the parent returns it. A child that cannot be reached, refuses, disconnects before its
// subtree's ranks have all exited, or is silent for the silence budget is reported once through `onLost`
// with one line, and the link closes (the child then stops its ranks, as for a lost launcher).
// Loop-thread only; handlers hold weak references, so dropping the last shared_ptr after close() is safe.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
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
    std::function<void(const wire::StoreRequest&)> onStore;  ///< the child's store traffic (docs/rendezvous.md)
  };

  /// `dial` is a TreeClient context that outlives the link; `clientName` goes into the child's log.
  static std::shared_ptr<ChildLink> create(boost::asio::io_context& io, boost::asio::ssl::context& dial,
                                           proto::ChildTreeLaunch child, std::string clientName, Timing timing,
                                           Callbacks callbacks);

  /// Dials the child; the subtree launch goes out once it has welcomed us.
  void start();
  /// Sends `signal` for the job to the child (queued until the launch has gone out).
  void signal(int signal);
  /// Returns `bytes` of the child's output window (the parent passed that much of its output on).
  void credit(uint64_t bytes);
  /// Sends one message to the child (a StoreReply; dropped once closed or lost).
  void send(const wire::Envelope& envelope);
  /// Closes without reporting a loss (the child stops the job's ranks on the disconnect).
  void close();

  const std::string& host() const { return child_.host; }
  const std::string& jobId() const { return jobId_; }

 private:
  ChildLink(boost::asio::io_context& io, proto::ChildTreeLaunch child, Timing timing, Callbacks callbacks);
  void onReady(const wire::Welcome& welcome);
  void onEnvelope(const wire::Envelope& envelope);
  void onClosed(const std::string& reason);
  void lose(const std::string& cause);
  void armBeat();

  boost::asio::io_context& io_;             ///< the agent's loop
  proto::ChildTreeLaunch child_;            ///< where to dial, what to send
  Timing timing_;                           ///< injected durations and window
  Callbacks callbacks_;                     ///< where events and the loss go
  std::string jobId_;                       ///< the launch's job id
  int expectedRanks_ = 0;                   ///< ranks in the child's subtree
  int exitedRanks_ = 0;                     ///< ranks it reported ended (or never started): all = a later hang-up is no loss
  std::shared_ptr<AgentClient> client_;     ///< the connection to the child's agent
  std::unique_ptr<HeartbeatMonitor> monitor_;  ///< the child's silence, from its Welcome on
  boost::asio::steady_timer beat_;          ///< our heartbeat to the child
  std::vector<int> pendingSignals_;         ///< signals asked for before the launch went out
  bool launched_ = false;                   ///< the subtree launch was sent
  bool done_ = false;                       ///< closed or lost: nothing more is reported
};

}  // namespace dsrun::agent
