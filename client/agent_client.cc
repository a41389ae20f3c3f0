#include "client/agent_client.h"

#include <netinet/in.h>
#include <openssl/ssl.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <algorithm>
#include <utility>

#include "common/error.h"
#include "common/strings.h"
#include "proto/protocol.h"
#include "proto/rank_events.h"
#include "tls/ssl_context.h"

namespace dsrun {

namespace asio = boost::asio;

namespace {

/// What an EventBatch may carry: what a star agent sends about its jobs, and NodeLost.
bool isEvent(const wire::Envelope& e) {
  return e.has_rank_started() || e.has_output() || e.has_rank_exited() || e.has_rank_progress() ||
         e.has_ranks_started() || e.has_ranks_exited() ||
         (e.has_error() && !e.error().job_id().empty()) || e.has_node_lost();
}

}  // namespace

std::shared_ptr<AgentClient> AgentClient::create(asio::io_context& io, asio::ssl::context& ssl, std::string host,
                                                 int port, std::string clientName, Callbacks callbacks) {
  return std::shared_ptr<AgentClient>(
      new AgentClient(io, ssl, std::move(host), port, std::move(clientName), std::move(callbacks)));
}

AgentClient::AgentClient(asio::io_context& io, asio::ssl::context& ssl, std::string host, int port,
                         std::string clientName, Callbacks callbacks)
    : io_(io),
      resolver_(io),
      stream_(io, ssl),
      deadline_(io),
      beat_(io),
      host_(std::move(host)),
      port_(port),
      address_(strCat(host_, ":", port_)),
      clientName_(std::move(clientName)),
      callbacks_(std::move(callbacks)),
      decoder_(strCat("agent ", address_)),
      readBuffer_(64 * 1024, '\0') {}

void AgentClient::connect(std::chrono::milliseconds timeout) {
  armDeadline(timeout, timeout);
  stage_ = "resolving";
  resolver_.async_resolve(dialAddress_.empty() ? host_ : dialAddress_, std::to_string(port_), [self = shared_from_this()](
                                                            const boost::system::error_code& ec,
                                                            const asio::ip::tcp::resolver::results_type& results) {
    if (self->closed_) return;
    if (ec) {
      self->fail(strCat("resolve: ", ec.message()));
      return;
    }
    self->stage_ = "connecting";
    asio::async_connect(self->stream_.lowest_layer(), results,
                        [self](const boost::system::error_code& cec, const asio::ip::tcp::endpoint&) {
                          if (self->closed_) return;
                          if (cec) {
                            self->fail(strCat("connect: ", cec.message(), " (is dsrun-agent running there?)"));
                            return;
                          }
                          self->onConnected();
                        });
  });
}

void AgentClient::armDeadline(std::chrono::milliseconds wait, std::chrono::milliseconds timeout) {
  deadline_.expires_after(wait);
  deadline_.async_wait([self = shared_from_this(), timeout](const boost::system::error_code& ec) {
    if (ec || self->ready_ || self->closed_) return;
    // The agent's answer waiting unread in our socket: this loop was behind (a parent agent forking its ranks
    // on a starved machine), not the agent silent. Read it before judging again.
    if (self->handshakeDone_ && self->bytesWaiting() > 0) {
      self->armDeadline(std::chrono::milliseconds(100), timeout);
      return;
    }
    self->fail(strCat("no answer within ", timeout.count(), " ms (", self->stage_, ")"));
  });
}

void AgentClient::onConnected() {
  boost::system::error_code ignored;
  stream_.lowest_layer().set_option(asio::ip::tcp::no_delay(true), ignored);
  if (userTimeoutMs_ > 0) {
    // Data we sent (heartbeats, credits) unacknowledged this long: the kernel gives the connection up
    // instead of retransmitting for ~15 minutes (a host whose network died without a reset).
    const unsigned int ms = userTimeoutMs_;
    ::setsockopt(stream_.lowest_layer().native_handle(), IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms);
  }
  stage_ = "TLS handshake";
  tls::expectServerName(stream_.native_handle(), host_);
  stream_.async_handshake(asio::ssl::stream_base::client, [self = shared_from_this()](
                                                              const boost::system::error_code& ec) {
    if (self->closed_) return;
    if (ec) {
      self->fail(strCat("TLS handshake: ", tls::describeHandshakeFailure(self->stream_.native_handle(), ec),
                        "\n  hint: the agent must hold a node certificate from the CA of --tls_dir, issued for '",
                        self->host_, "' as the hostfile names it ('dsrun --make_node_cert DIR --host ", self->host_,
                        " --out NODEDIR'), and not revoked"));
      return;
    }
    self->handshakeDone_ = true;
    self->stage_ = "waiting for welcome";
    wire::Envelope hello;
    hello.mutable_hello()->set_protocol_version(proto::kProtocolVersion);
    hello.mutable_hello()->set_client_name(self->clientName_);
    hello.mutable_hello()->set_output_window_bytes(self->outputWindowBytes_);
    hello.mutable_hello()->set_agent_heartbeats(self->agentHeartbeats_);
    hello.mutable_hello()->set_agent_heartbeat_ms(self->beatMs_);
    hello.mutable_hello()->set_launcher_silence_ms(self->silenceMs_);
    hello.mutable_hello()->set_merged_rank_events(self->mergedRankEvents_);
    hello.mutable_hello()->set_tree_edge_signals(self->treeEdgeSignals_);
    self->send(hello);
    self->readMore();
  });
}

void AgentClient::readMore() {
  stream_.async_read_some(asio::buffer(readBuffer_), [self = shared_from_this()](const boost::system::error_code& ec,
                                                                                   size_t n) {
    if (self->closed_) return;
    if (ec) {
      if (self->ready_ && (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated)) {
        self->fail("connection closed by the agent");
      } else if (!self->ready_) {
        // In TLS 1.3 the agent judges our certificate after our handshake completed: its refusal
        // arrives here, as an alert, instead of a Welcome.
        self->fail(strCat("closed the connection before welcome: ", tls::describeTlsError(ec),
                          " (the agent refused this launcher's certificate: is it from another CA, or revoked "
                          "in the agent's crl.pem?)"));
      } else {
        self->fail(strCat("read: ", tls::describeTlsError(ec)));
      }
      return;
    }
    self->lastHeard_ = std::chrono::steady_clock::now();
    self->lastHeardWall_ = std::chrono::system_clock::now();
    std::vector<wire::Envelope> envelopes;
    try {
      envelopes = self->decoder_.feed(std::string_view(self->readBuffer_.data(), n));
    } catch (const ParseError& e) {
      self->fail(strCat("protocol error: ", e.what()));
      return;
    }
    for (const auto& e : envelopes) {
      if (self->closed_) return;
      self->onFrame(e);
    }
    if (!self->closed_) self->readMore();
  });
}

void AgentClient::onFrame(const wire::Envelope& e) {
  if (!ready_) {
    if (e.has_welcome()) {
      if (e.welcome().protocol_version() != proto::kProtocolVersion) {
        fail(strCat("protocol version mismatch: agent speaks version ", e.welcome().protocol_version(),
                    ", this dsrun speaks version ", proto::kProtocolVersion, "\n  hint: run the same dsrun release "
                    "on every host (dsrun --version; dsrun-agent comes in the same package)"));
        return;
      }
      ready_ = true;
      agentSendsHeartbeats_ = e.welcome().agent_heartbeats();
      agentBeatMs_ = e.welcome().agent_heartbeat_ms();
      agentChecksPorts_ = e.welcome().port_check();
      agentProbesMesh_ = e.welcome().mesh_probe();
      agentServesTrees_ = e.welcome().tree_launch();
      agentProbesTree_ = e.welcome().tree_probe();
      agentMergesRankEvents_ = e.welcome().merged_rank_events();
      deadline_.cancel();
      if (callbacks_.onReady) callbacks_.onReady(e.welcome());
    } else if (e.has_error()) {
      // An agent of another protocol version says so, naming both (request_handler.cc); say how to fix it.
      const std::string& message = e.error().message();
      const bool versions = message.rfind("protocol version mismatch", 0) == 0;
      fail(strCat("refused: ", message, versions ? "\n  hint: run the same dsrun release on every host (dsrun "
                                                   "--version; dsrun-agent comes in the same package)" : ""));
    } else {
      fail(strCat("protocol error: expected welcome, got message type ", static_cast<int>(e.msg_case())));
    }
    return;
  }
  if (callbacks_.onEnvelope) {
    callbacks_.onEnvelope(e);
    return;
  }
  switch (e.msg_case()) {
    case wire::Envelope::kEventBatch:
      // Events only (proto/agent.proto, EventBatch): a batch that nests or carries a reply is a broken agent.
      for (const auto& event : e.event_batch().events()) {
        if (closed_) return;
        if (!isEvent(event)) {
          fail(strCat("protocol error: an event batch holds message type ", static_cast<int>(event.msg_case())));
          return;
        }
        onFrame(event);
      }
      break;
    case wire::Envelope::kNodeLost:
      if (callbacks_.onNodeLost) callbacks_.onNodeLost(e.node_lost());
      break;
    case wire::Envelope::kRankStarted:
      if (callbacks_.onRankStarted) callbacks_.onRankStarted(e.rank_started());
      break;
    case wire::Envelope::kOutput:
      if (callbacks_.onOutput) callbacks_.onOutput(e.output());
      break;
    case wire::Envelope::kRankExited:
      if (callbacks_.onRankExited) callbacks_.onRankExited(e.rank_exited());
      break;
    case wire::Envelope::kRanksStarted:
    case wire::Envelope::kRanksExited:
      // Asked for (setMergedRankEvents): one rank at a time to the same callbacks as unmerged events.
      try {
        if (e.has_ranks_started()) {
          for (const auto& s : proto::ranksStarted(e.ranks_started())) {
            if (closed_) return;
            if (callbacks_.onRankStarted) callbacks_.onRankStarted(s);
          }
        } else {
          for (const auto& x : proto::ranksExited(e.ranks_exited())) {
            if (closed_) return;
            if (callbacks_.onRankExited) callbacks_.onRankExited(x);
          }
        }
      } catch (const Error& error) {
        fail(strCat("protocol error: ", error.what()));
        return;
      }
      break;
    case wire::Envelope::kRankProgress:
      if (callbacks_.onRankProgress) callbacks_.onRankProgress(e.rank_progress());
      break;
    case wire::Envelope::kTreeAdopted:
      break;  // dsrun re-fanned a lost root's child: its events follow as any node's
    case wire::Envelope::kHeartbeat:
      break;  // liveness only: lastHeard_ is updated for every read
    case wire::Envelope::kPortCheckReply:
      if (auto done = std::exchange(portCheckDone_, nullptr)) done(e.port_check_reply());
      break;
    case wire::Envelope::kTreeProbeReport:
      if (callbacks_.onTreeProbeReport) callbacks_.onTreeProbeReport(e.tree_probe_report());
      break;
    case wire::Envelope::kMeshProbeReply:
      if (auto done = std::exchange(meshProbeDone_, nullptr)) done(e.mesh_probe_reply());
      break;
    case wire::Envelope::kError:
      if (e.error().job_id().empty()) {
        fail(e.error().message());  // connection-level: the agent closes after it
      } else if (callbacks_.onError) {
        callbacks_.onError(e.error());
      }
      break;
    default:
      fail(strCat("protocol error: unexpected message type ", static_cast<int>(e.msg_case())));
  }
}

void AgentClient::send(const wire::Envelope& envelope) {
  if (closed_) return;
  writeQueue_.push_back(proto::encodeFrame(envelope));
  writeNext();
}

void AgentClient::checkPort(int port, std::function<void(const wire::PortCheckReply&)> done) {
  portCheckDone_ = std::move(done);
  wire::Envelope e;
  e.mutable_port_check()->set_port(static_cast<uint32_t>(port));
  send(e);
}

void AgentClient::probeMesh(const std::vector<std::string>& targets, uint32_t timeoutMs,
                            std::function<void(const wire::MeshProbeReply&)> done) {
  meshProbeDone_ = std::move(done);
  wire::Envelope e;
  for (const std::string& target : targets) e.mutable_mesh_probe()->add_targets(target);
  e.mutable_mesh_probe()->set_timeout_ms(timeoutMs);
  send(e);
}

void AgentClient::sendCredit(uint64_t bytes) {
  wire::Envelope e;
  e.mutable_output_credit()->set_bytes(bytes);
  send(e);
}

void AgentClient::closeAfterFlush() {
  closeWhenFlushed_ = true;
  if (!handshakeDone_) close();
  writeNext();
}

void AgentClient::writeNext() {
  if (closeWhenFlushed_ && !writing_ && writeQueue_.empty()) close();
  if (writing_ || writeQueue_.empty() || closed_) return;
  writing_ = true;
  asio::async_write(stream_, asio::buffer(writeQueue_.front()),
                    [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                      self->writing_ = false;
                      if (self->closed_) return;
                      if (ec) {
                        self->fail(strCat("write: ", tls::describeTlsError(ec)));
                        return;
                      }
                      self->writeQueue_.pop_front();
                      self->writeNext();
                    });
}

void AgentClient::fail(const std::string& what) {
  if (closed_) return;
  close();
  if (callbacks_.onClosed) callbacks_.onClosed(strCat("agent ", address_, ": ", what));
}

size_t AgentClient::bytesWaiting() {
  if (closed_) return 0;
  boost::system::error_code ec;
  const size_t inSocket = stream_.lowest_layer().available(ec);
  const int inTls = ::SSL_pending(stream_.native_handle());
  return (ec ? 0 : inSocket) + static_cast<size_t>(std::max(inTls, 0));
}

void AgentClient::beatEvery(std::chrono::milliseconds period) {
  beatPeriod_ = std::max(period, std::chrono::milliseconds(1));
  armBeat();
}

void AgentClient::armBeat() {
  beat_.expires_after(beatPeriod_);
  beat_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self || self->closed_ || self->closeWhenFlushed_) return;
    wire::Envelope beat;
    beat.mutable_heartbeat();
    self->send(beat);
    self->armBeat();
  });
}

void AgentClient::close() {
  if (closed_) return;
  closed_ = true;
  deadline_.cancel();
  beat_.cancel();
  resolver_.cancel();
  boost::system::error_code ignored;
  stream_.lowest_layer().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  stream_.lowest_layer().close(ignored);
  writeQueue_.clear();
}

}  // namespace dsrun
