#pragma once
// Session: one authenticated launcher connection (the Asio HTTP server's `connection`). Runs the
// Connection's handshake (TLS: a peer without a certificate of the cluster CA is refused before any
// byte of the protocol is parsed), then reads frames, asks the RequestHandler what to do and does it,
// and writes replies and job events through a bounded write queue. It is the one place where the
// agent's jobs meet the wire: LaunchRequests become JobSpecs and job events become messages here
// (agent/session_wire.h). Owned by the SessionManager; handlers hold shared_from_this(). Loop-thread only.

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/connection.h"
#include "agent/heartbeat_monitor.h"
#include "agent/job_events.h"
#include "agent/job_spec.h"
#include "agent/member_state.h"
#include "agent/request_handler.h"
#include "agent/thread_checker.h"
#include "agent/tree_gate.h"
#include "agent/tree_relay.h"
#include "proto/frame_codec.h"

namespace dsrun::agent {

struct AdmittedTree;  // agent/tree_gate.h

class JobTable;
class SessionManager;
class StoreService;

/// What a session needs to serve tree launches (docs/agent.md "Tree launch"); both null: it refuses them.
struct TreeServices {
  TreeGate* gate = nullptr;                   ///< admits launches (shared by the agent's sessions)
  boost::asio::ssl::context* dial = nullptr;  ///< this node's certificate as a client (tls::Role::TreeClient)
  bool testHold = false;  ///< AgentOptions::testHoldTreeLaunches: admitted launches are then ignored
  StoreService* stores = nullptr;             ///< --rendezvous agent (docs/rendezvous.md); null: refused
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  struct Timing {
    std::chrono::milliseconds handshakeTimeout{10000};  ///< TLS handshake + Hello must finish within
    std::chrono::milliseconds heartbeatPeriod{1000};    ///< monitor period (client beats at least this often)
    int heartbeatThreshold = 3;                         ///< missed periods before the peer is lost
  };

  /// Queue sizes for backpressure on rank output.
  static constexpr size_t kHighWaterBytes = 4u << 20;
  static constexpr size_t kLowWaterBytes = 1u << 20;
  /// A peer with this much unread in its queue is cut off: output pauses at kHighWaterBytes, so only
  /// a client that floods requests without reading the replies gets here.
  static constexpr size_t kMaxQueuedBytes = 32u << 20;

  /// `peer` names the connection in the log ("addr:port").
  Session(uint64_t id, std::unique_ptr<Connection> connection, std::string peer, SessionManager& manager,
          JobTable& table, const RequestHandler& handler, Timing timing, TreeServices tree = {});

  /// Starts the handshake and, once the peer is authenticated, the read loop.
  void start();
  /// Closes at once and stops this connection's jobs; `reason` is logged (empty: nothing logged).
  void stop(const std::string& reason);
  /// The agent is shutting down: tell the peer, flush, close.
  void drain();

  /// Queues one envelope for the peer (dropped once the session is closing). Output data spends
  /// the peer's output window (Hello.output_window_bytes), if it asked for one.
  void send(const wire::Envelope& envelope);
  /// Sends the wire message for one of this session's job events (agent/session_wire.h), as send().
  void deliver(JobEvent event);
  /// True while the write queue is above kHighWaterBytes or the peer's output window is spent.
  bool congested() const {
    return orphaned_ || queuedBytes_ > kHighWaterBytes || (windowed_ && outputCredit_ <= 0);
  }
  /// Runs `resume` (posted, never from inside this call) once the queue falls below kLowWaterBytes and
  /// the peer has returned output credit, or once the session stops.
  void whenDrained(std::function<void()> resume);

  uint64_t id() const { return id_; }
  const std::string& peer() const { return peer_; }
  MemberState state() const { return state_; }
  /// The signed root of the tree job this session carries (empty: none).
  const std::string& treeRoot() const { return treeRoot_; }
  /// The tree job this session carries (empty: none).
  const std::string& treeJob() const { return treeJob_; }

 private:
  /// How many times the handshake deadline is extended while the peer's bytes wait unread (our loop is behind).
  static constexpr int kHandshakeExtensions = 3;
  /// The TLS handshake + Hello deadline; extended (at most kHandshakeExtensions times) while the peer's bytes
  /// wait unread.
  void armHandshakeDeadline(int extensions);
  void onHandshake(const std::string& failure, const std::string& peerIdentity);
  void readMore();
  void onRead(const boost::system::error_code& ec, size_t n);
  void dispatch(const wire::Envelope& envelope);
  void writeNext();
  void closeAfterFlush(const std::string& reason);
  void transition(MemberEvent event);
  void runDrainedCallbacks();
  void onWelcomed(const wire::Hello& hello);
  /// Admits a tree launch (refusing it with one logged line naming the peer), forwards it to the children and
  /// starts this node's ranks.
  void startTree(const wire::TreeLaunch& launch);
  /// A probed tree launch (TreeLaunch.probe), admitted: forwards it to the children (held there too), probes
  /// this node's targets, keeps this node's ranks until TreeGo, and sends the subtree's TreeProbeReport up once
  /// every answer is in (session_tree_probe.cc).
  void holdTree(const wire::TreeLaunch& launch, AdmittedTree admitted);
  /// TreeGo: starts the held job's ranks here and passes the go to the children. An unknown job id is refused.
  void goTree(const std::string& jobId);
  /// Admits a TreeAdopt: takes the running job over from the session that carried it (orphaned, or still
  /// connected to a parent that was given up), or starts it if it never came; acknowledges with TreeAdopted.
  void adoptTree(const wire::TreeLaunch& launch);
  /// Refuses a tree launch or adoption with one logged line and a job-scoped Error; a node peer is cut off.
  void refuseTree(const wire::TreeLaunch& launch, const std::string& why);
  /// Forwards an admitted tree launch to the children and starts this node's ranks (a probed `launch`: holds
  /// them until TreeGo, holdTree).
  void runTree(const wire::TreeLaunch& launch, AdmittedTree admitted);
  /// Takes over `from`'s tree job: its ranks, its children (TreeRelay) and the events it held meanwhile.
  void takeOver(Session& from);
  /// What `from` hands over: its events held while orphaned; it then closes without stopping the job.
  std::vector<wire::Envelope> handOver();
  /// The parent is gone and this node may be adopted: close the connection, keep the job and the children,
  /// hold the events, and stop the job only if no ancestor adopts it within orphanWait().
  void orphan(const std::string& reason);
  /// Nobody adopted the job within `waited`: stop it here and below (the children stay attached), and keep
  /// what it reports, with the children, for a late adopter for orphanHold() more; then abandon().
  void giveUp(std::chrono::milliseconds waited);
  /// Nobody adopted the job at all: drop what it held, release the children with the job's end, end this session.
  void abandon(const std::string& reason);
  /// How long an orphaned job waits for an adopter (docs/agent.md "An interior agent dies").
  std::chrono::milliseconds orphanWait() const;
  /// How long a job that gave up waiting is still kept for a late adopter (docs/agent.md, the same section).
  std::chrono::milliseconds orphanHold() const;
  proto::TreeIdentity peerIdentity() const;
  /// Starts this node's ranks of an admitted tree launch (runTree), then the signals asked for meanwhile.
  void startOwnRanks(const std::string& job);
  /// Closes what this session opened in the StoreService (its link below, the stores of its jobs).
  void closeStores();
  /// The connection ends: marked disconnected, its timers and monitor stopped, its socket closed and unsent
  /// frames dropped. The jobs are the caller's to stop or keep (an orphan keeps them for an adopter).
  void hangUp();
  /// Starts `launch`'s ranks as a job of this session; with LaunchRequest.rendezvous, after opening its store
  /// (requests go up this connection when `parentIsAgent`) and pointing the ranks at it.
  void launchJob(const wire::LaunchRequest& launch, bool parentIsAgent);
  /// A StoreRequest from the agent at the other end (the star's root hears every other agent), or a StoreReply
  /// from the tree parent.
  void routeStore(const wire::Envelope& envelope);
  /// The timing and window of this node's edges to its children: those its parent asked of this edge.
  ChildLink::Timing childTiming() const;
  void armHeartbeat();
  /// Judge the launcher by its own budget (Hello.launcher_silence_ms, bounded: launcherSilenceBudgetMs): a
  /// longer one from the welcome on, a shorter one once `launched` (its first launch arrived).
  void useLauncherBudget(bool launched);
  /// A monitor that stops this session (and its jobs) after `threshold` periods of `period` without a message,
  /// logging `budgetMs` as the silence that did it.
  std::unique_ptr<HeartbeatMonitor> makeMonitor(std::chrono::milliseconds period, int threshold, int64_t budgetMs);

  uint64_t id_;                          ///< unique per agent process; owner id of this session's jobs
  std::unique_ptr<Connection> connection_;  ///< the byte stream to the launcher
  std::string peer_;                     ///< "addr:port" of the peer, for logs
  SessionManager& manager_;              ///< told when this session ends
  JobTable& table_;                      ///< runs this session's jobs
  const RequestHandler& handler_;        ///< protocol decisions
  Timing timing_;                        ///< injected durations
  boost::asio::steady_timer deadline_;   ///< handshake + Hello deadline
  std::unique_ptr<HeartbeatMonitor> monitor_;  ///< started once welcomed (on the launcher's budget if shorter)
  uint32_t launcherSilenceMs_ = 0;       ///< Hello.launcher_silence_ms, until applied (useLauncherBudget)
  wire::Hello hello_;                    ///< the peer's Hello, as received (its asks are passed down a tree)
  std::string peerIdentity_;             ///< the peer's certificate, for the log
  bool peerIsNode_ = false;              ///< the peer holds a node certificate (a tree parent)
  TreeServices tree_;                    ///< null: tree launches are refused
  std::unique_ptr<TreeRelay> relay_;     ///< once a tree launch was accepted: children, batching, credit
  std::map<std::string, wire::LaunchRequest> heldTrees_;  ///< probed tree launches waiting for TreeGo, by job
  std::string treeJob_;                  ///< the tree job this connection carries (one per parent edge)
  std::string treeRoot_;                 ///< its signed root: an adoption must carry the same
  bool adoptable_ = false;               ///< the job's node has ancestors: losing the parent starts a wait
  bool released_ = false;                ///< the parent said nobody adopts the job: no wait
  bool releasedJobEnds_ = false;         ///< ... and the job ends below too (TreeReleased.job_ends)
  bool orphaned_ = false;                ///< the connection is gone, the job waits for an adopter
  bool gaveUp_ = false;                  ///< ... and nobody came within the wait: stopped, held for orphanHold()
  double treeKillGraceS_ = 0;            ///< the tree job's LaunchRequest.kill_grace_s (<= 0: the agent's)
  std::vector<wire::Envelope> orphanQueue_;  ///< what would have gone up while orphaned
  /// A tree launch's own ranks, waiting for the children's launches to go out, with the signals asked for
  /// meanwhile.
  struct PendingOwn {
    wire::LaunchRequest launch;
    bool parentIsAgent = false;  ///< launchJob's
    std::vector<int> signals;
  };
  /// Admitted tree launches whose own ranks wait (runTree), by job.
  std::map<std::string, PendingOwn> pendingOwn_;
  uint64_t storeLink_ = 0;               ///< this connection as a link below the StoreService (0: not yet)
  std::vector<std::string> storeJobs_;   ///< jobs whose store this session opened (closed when it ends)
  proto::FrameDecoder decoder_;          ///< incoming frames
  std::vector<char> readBuffer_;         ///< target of async_read_some
  std::deque<std::string> writeQueue_;   ///< encoded frames waiting to be written
  size_t queuedBytes_ = 0;               ///< sum of writeQueue_ sizes
  bool writing_ = false;                 ///< an async_write is in flight
  bool closing_ = false;                 ///< close once the queue is flushed; ignore further input
  bool stopped_ = false;                 ///< stop() ran
  bool welcomed_ = false;                ///< Hello accepted
  std::string closeReason_;              ///< logged when the flush completes
  std::vector<std::function<void()>> drainedCallbacks_;  ///< whenDrained() waiters
  bool overflowed_ = false;              ///< kMaxQueuedBytes exceeded; the stop is posted
  bool windowed_ = false;                ///< the peer asked for output flow control
  int64_t outputCredit_ = 0;             ///< output bytes the peer still accepts (windowed_ only)
  boost::asio::steady_timer heartbeat_;  ///< our own Heartbeat to the peer, if it asked for them
  boost::asio::steady_timer orphanWait_;  ///< how long an adopter may take
  std::chrono::milliseconds beatInterval_{500};  ///< their interval (agentBeatIntervalMs)
  MemberState state_ = MemberState::Joining;  ///< membership lifecycle
  ThreadChecker thread_;                 ///< loop-thread confinement
};

}  // namespace dsrun::agent
