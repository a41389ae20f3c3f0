#pragma once
// AgentClient: the launcher's end of one dsrun-agent connection (Boost.Asio, mutual TLS). Connects,
// authenticates the agent against the cluster CA, says Hello, and then forwards LaunchRequests,
// SignalRequests and heartbeats while reporting the agent's events through callbacks. Lives on the
// caller's io_context; every method and callback runs on that loop's thread.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proto/agent.pb.h"
#include "proto/frame_codec.h"

namespace dsrun {

class AgentClient : public std::enable_shared_from_this<AgentClient> {
 public:
  struct Callbacks {
    std::function<void(const wire::Welcome&)> onReady;  ///< handshake done, launches may be sent
    std::function<void(const wire::RankStarted&)> onRankStarted;
    std::function<void(const wire::OutputChunk&)> onOutput;
    std::function<void(const wire::RankExited&)> onRankExited;
    std::function<void(const wire::RankProgress&)> onRankProgress;  ///< a rank's step counter moved
    std::function<void(const wire::Error&)> onError;  ///< an Error from the agent (job or connection)
    /// A node of a tree launch was lost (NodeLost, relayed by a root; the events of an EventBatch arrive one
    /// by one through the other callbacks).
    std::function<void(const wire::NodeLost&)> onNodeLost;
    /// A root's report of its subtree's mesh probe (a TreeLaunch sent with `probe`).
    std::function<void(const wire::TreeProbeReport&)> onTreeProbeReport;
    /// Set: every message after Welcome goes here as it came (EventBatch unopened), instead of to the typed
    /// callbacks above (a tree agent relays its child's events up unchanged). onClosed is still called.
    std::function<void(const wire::Envelope&)> onEnvelope;
    /// The connection ended or never came up; `reason` is one line starting with "agent HOST:PORT: ".
    /// Called at most once; nothing else is called afterwards.
    std::function<void(const std::string& reason)> onClosed;
  };

  /// `ssl` must outlive the client (a client context from tls::makeSslContext).
  static std::shared_ptr<AgentClient> create(boost::asio::io_context& io, boost::asio::ssl::context& ssl,
                                             std::string host, int port, std::string clientName, Callbacks callbacks);

  /// What Hello asks of the agent: an output window (0: none; see OutputCredit) and heartbeats.
  /// `beatMs`: the interval of the agent's beats we ask for (0: the agent's default). `silenceMs`: how long our
  /// own silence may last before the agent stops our jobs (Hello.launcher_silence_ms; 0: the agent's timeout).
  void setHello(uint64_t outputWindowBytes, bool agentHeartbeats, uint32_t beatMs = 0, uint32_t silenceMs = 0) {
    outputWindowBytes_ = outputWindowBytes;
    agentHeartbeats_ = agentHeartbeats;
    beatMs_ = beatMs;
    silenceMs_ = silenceMs;
  }
  /// Asks for merged rank events (Hello.merged_rank_events): a tree agent may then send RanksStarted and
  /// RanksExited, which reach onRankStarted and onRankExited one rank at a time like any other.
  void setMergedRankEvents(bool merged) { mergedRankEvents_ = merged; }
  /// Hello.tree_edge_signals: this client (a tree parent's edge) takes TreeReattached (agent/tree_edge_signal.h).
  void announceTreeEdgeSignals() { treeEdgeSignals_ = true; }
  /// Dial `address` instead of the host name; the agent's certificate must still name the host (a tree
  /// launch says where each node's agent listens and which name its certificate carries).
  void setDialAddress(std::string address) { dialAddress_ = std::move(address); }
  /// TCP_USER_TIMEOUT for the connection (0: the kernel's default), set when it connects.
  void setUserTimeout(unsigned int ms) { userTimeoutMs_ = ms; }
  /// Resolves, connects, runs the TLS handshake and sends Hello; onReady or onClosed follows. The
  /// whole sequence must finish within `timeout`.
  void connect(std::chrono::milliseconds timeout);
  /// Returns `bytes` of output to the agent's window (they were written out).
  void sendCredit(uint64_t bytes);
  /// MASTER_PORT pre-flight: asks the agent whether `port` can be bound on its host (0: to pick a free
  /// one) and calls `done` with the answer, once (not if the connection ends first: onClosed is called).
  /// Only for an agent that agentChecksPorts(); a second call replaces a pending `done`.
  void checkPort(int port, std::function<void(const wire::PortCheckReply&)> done);
  /// Mesh probe: asks the agent to connect to each of `targets` ("host:port") within `timeoutMs` and calls
  /// `done` with its answer, once (as checkPort). Only for an agent that agentProbesMesh().
  void probeMesh(const std::vector<std::string>& targets, uint32_t timeoutMs,
                 std::function<void(const wire::MeshProbeReply&)> done);
  /// Queues one envelope (ignored once closed).
  void send(const wire::Envelope& envelope);
  /// Sends a Heartbeat every `period` from now until the connection closes (or is closing): an agent that
  /// dials another agent beats as dsrun does, so the other end does not judge it silent.
  void beatEvery(std::chrono::milliseconds period);
  /// Closes the connection without calling onClosed (the agent then stops this client's jobs).
  void close();
  /// Closes once what is queued has been written (at once if the TLS session is not up: nothing could be).
  void closeAfterFlush();

  /// "HOST:PORT" as given.
  const std::string& address() const { return address_; }
  const std::string& host() const { return host_; }
  bool ready() const { return ready_; }
  bool closed() const { return closed_; }
  /// The agent agreed to send heartbeats: its silence means it (or the network) is gone.
  bool agentHeartbeats() const { return agentSendsHeartbeats_; }
  /// The interval of the agent's beats it promised in Welcome (0: an agent that does not say).
  uint32_t agentBeatMs() const { return agentBeatMs_; }
  /// The agent answers PortCheckRequest (Welcome.port_check; older agents do not).
  bool agentChecksPorts() const { return agentChecksPorts_; }
  /// The agent answers MeshProbeRequest (Welcome.mesh_probe).
  bool agentProbesMesh() const { return agentProbesMesh_; }
  /// The agent serves tree launches (Welcome.tree_launch).
  bool agentServesTrees() const { return agentServesTrees_; }
  /// The agent holds a probed tree launch until TreeGo and reports its subtree's probe (Welcome.tree_probe).
  bool agentProbesTree() const { return agentProbesTree_; }
  /// The agent merges rank events when asked (Welcome.merged_rank_events).
  bool agentMergesRankEvents() const { return agentMergesRankEvents_; }
  /// When the last byte arrived from the agent (steady clock), and the same moment by the wall clock.
  std::chrono::steady_clock::time_point lastHeard() const { return lastHeard_; }
  std::chrono::system_clock::time_point lastHeardWall() const { return lastHeardWall_; }
  /// Bytes the agent sent that this loop has not read yet (in the socket, or decrypted and unread).
  size_t bytesWaiting();
  /// Every queued frame has been handed to the kernel.
  bool sendQueueEmpty() const { return writeQueue_.empty() && !writing_; }

 private:
  AgentClient(boost::asio::io_context& io, boost::asio::ssl::context& ssl, std::string host, int port,
              std::string clientName, Callbacks callbacks);
  void fail(const std::string& what);
  /// Fails the connection after `wait` unless welcomed by then (or unless the agent's answer waits unread:
  /// then looks again shortly); `timeout` is the whole deadline, for the message.
  void armDeadline(std::chrono::milliseconds wait, std::chrono::milliseconds timeout);
  void onConnected();
  void readMore();
  void onFrame(const wire::Envelope& envelope);
  void writeNext();
  void armBeat();

  boost::asio::io_context& io_;                                    ///< the caller's loop
  boost::asio::ip::tcp::resolver resolver_;                        ///< host name lookup
  boost::asio::ssl::stream<boost::asio::ip::tcp::socket> stream_;  ///< the TLS connection
  boost::asio::steady_timer deadline_;                             ///< connect + handshake + welcome deadline
  boost::asio::steady_timer beat_;                                 ///< beatEvery's
  std::chrono::milliseconds beatPeriod_{0};                        ///< beatEvery's; 0: no beats
  std::string host_;                                               ///< as in the hostfile
  int port_;                                                       ///< --agent_port
  std::string address_;                                            ///< "host:port" for messages
  std::string dialAddress_;                                        ///< empty: dial host_
  std::string clientName_;                                         ///< sent in Hello
  Callbacks callbacks_;                                            ///< event sinks
  proto::FrameDecoder decoder_;                                    ///< incoming frames
  std::string readBuffer_;                                         ///< async_read_some target
  std::deque<std::string> writeQueue_;                             ///< encoded frames to send
  bool writing_ = false;                                           ///< an async_write is in flight
  bool closeWhenFlushed_ = false;                                  ///< closeAfterFlush() was asked
  bool handshakeDone_ = false;                                     ///< TLS established
  bool ready_ = false;                                             ///< Welcome received
  bool closed_ = false;                                            ///< no more callbacks
  std::string stage_ = "connecting";                               ///< what we were doing, for errors
  uint64_t outputWindowBytes_ = 0;                                 ///< Hello.output_window_bytes
  bool agentHeartbeats_ = false;                                   ///< Hello.agent_heartbeats
  bool agentSendsHeartbeats_ = false;                              ///< Welcome.agent_heartbeats
  unsigned int userTimeoutMs_ = 0;                                 ///< TCP_USER_TIMEOUT
  uint32_t beatMs_ = 0;                                            ///< Hello.agent_heartbeat_ms
  uint32_t silenceMs_ = 0;                                         ///< Hello.launcher_silence_ms
  bool mergedRankEvents_ = false;                                  ///< Hello.merged_rank_events
  bool treeEdgeSignals_ = false;                                   ///< Hello.tree_edge_signals
  uint32_t agentBeatMs_ = 0;                                       ///< Welcome.agent_heartbeat_ms
  bool agentChecksPorts_ = false;                                  ///< Welcome.port_check
  std::function<void(const wire::PortCheckReply&)> portCheckDone_;  ///< see checkPort()
  bool agentProbesMesh_ = false;                                   ///< Welcome.mesh_probe
  bool agentServesTrees_ = false;                                  ///< Welcome.tree_launch
  bool agentProbesTree_ = false;                                   ///< Welcome.tree_probe
  bool agentMergesRankEvents_ = false;                             ///< Welcome.merged_rank_events
  std::function<void(const wire::MeshProbeReply&)> meshProbeDone_;  ///< see probeMesh()
  std::chrono::steady_clock::time_point lastHeard_;                ///< see lastHeard()
  std::chrono::system_clock::time_point lastHeardWall_;            ///< see lastHeardWall()
};

}  // namespace dsrun
