#include "agent/agent_server.h"

#include <cerrno>

#include "agent/tls_connection.h"
#include "common/error.h"
#include "common/logging.h"
#include "tls/ssl_context.h"

namespace dsrun::agent {
namespace {

/// Ranks one launch may start on this node (a LaunchRequest's, or a tree launch's share for this node).
constexpr int kMaxRanksPerJob = 4096;

std::string endpointText(const boost::asio::ip::tcp::endpoint& ep) {
  const auto addr = ep.address();
  return addr.is_v6() ? strCat("[", addr.to_string(), "]:", ep.port()) : strCat(addr.to_string(), ":", ep.port());
}

Session::Timing sessionTiming(const AgentServer::Options& o) {
  Session::Timing t;
  t.handshakeTimeout = o.handshakeTimeout;
  // Three periods per timeout: one late heartbeat is tolerated, a stopped launcher is noticed.
  t.heartbeatThreshold = 3;
  t.heartbeatPeriod = std::max(std::chrono::milliseconds(1), o.heartbeatTimeout / t.heartbeatThreshold);
  return t;
}

}  // namespace

AgentServer::AgentServer(boost::asio::io_context& io, Options options, boost::asio::ssl::context ssl,
                         Spawner& spawner)
    : io_(io),
      options_(std::move(options)),
      ssl_(std::move(ssl)),
      acceptor_(io),
      signals_(io, SIGTERM, SIGINT),
      handler_(RequestHandler::Config{options_.hostName,
                                      static_cast<uint32_t>(sessionTiming(options_).heartbeatPeriod.count()),
                                      kMaxRanksPerJob, !options_.tlsDir.empty()}),
      table_(io, spawner, sessions_,
             JobTable::Options{options_.killGrace, options_.drainAfterExit, options_.logDir, options_.hostName,
                               64 * 1024, options_.baseEnv}),
      reaper_(io, [this](pid_t pid, int waitStatus) { table_.onReaped(pid, waitStatus); }) {
  if (!options_.tlsDir.empty()) {
    crl_.emplace(options_.tlsDir, "--tls_dir");
    dial_.emplace(tls::makeSslContext(options_.tlsDir, tls::Role::TreeClient));
    dialCrl_.emplace(options_.tlsDir, "--tls_dir");
    gate_.emplace(options_.tlsDir, kMaxRanksPerJob);
  }
  stores_.emplace(io_, dial_ ? &*dial_ : nullptr, options_.hostName);
}

void AgentServer::start() {
  DSRUN_CHECK_THREAD(thread_);
  const std::string where = endpointText(options_.listen);
  boost::system::error_code ec;
  acceptor_.open(options_.listen.protocol(), ec);
  if (!ec) acceptor_.set_option(boost::asio::ip::tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(options_.listen, ec);
  if (ec) throw IoError(where, "bind", ec.value(), "starting dsrun-agent");
  acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) throw IoError(where, "listen", ec.value(), "starting dsrun-agent");
  DSRUN_LOG(INFO) << "listening on " << endpointText(acceptor_.local_endpoint());
  awaitSignal();
  accept();
}

boost::asio::ip::tcp::endpoint AgentServer::localEndpoint() const { return acceptor_.local_endpoint(); }

void AgentServer::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, boost::asio::ip::tcp::socket socket) {
    if (!acceptor_.is_open()) return;
    if (ec) {
      // EMFILE and friends: keep serving; the next accept may succeed once fds are released.
      DSRUN_WARN_ONCE << "accept: " << ec.message();
    } else {
      boost::system::error_code peerEc;
      const auto remote = socket.remote_endpoint(peerEc);
      std::string peer = peerEc ? std::string("unknown peer") : endpointText(remote);
      socket.set_option(boost::asio::ip::tcp::no_delay(true), peerEc);
      // Sieved first: a probe that only connects and closes is not a failed handshake. The handshake's own
      // deadline starts with the first byte, so a peer has at most twice handshakeTimeout in all.
      const uint64_t id = nextSessionId_++;
      sieving_.emplace(id, ProbeSieve::start(std::move(socket), options_.handshakeTimeout,
                                             [this, id, peer](ProbeSieve::Verdict verdict, boost::asio::ip::tcp::socket s) {
                                               sieving_.erase(id);
                                               onFirstByte(id, peer, verdict, std::move(s));
                                             }));
    }
    accept();
  });
}

void AgentServer::onFirstByte(uint64_t id, const std::string& peer, ProbeSieve::Verdict verdict,
                              boost::asio::ip::tcp::socket socket) {
  DSRUN_CHECK_THREAD(thread_);
  if (verdict == ProbeSieve::Verdict::Probe) {
    ++probes_;
    DSRUN_LOG(DEBUG) << peer << ": closed before sending a byte (a reachability probe)";
    return;
  }
  if (verdict == ProbeSieve::Verdict::Silent) {
    DSRUN_LOG(WARN) << peer << ": refused: no TLS handshake and hello within " << options_.handshakeTimeout.count()
                    << " ms";
    return;
  }
  if (!acceptor_.is_open()) return;  // shutting down: the socket closes as it goes out of scope
  // Before the handshake, so a certificate revoked a moment ago is refused on this connection.
  if (crl_) crl_->refresh(ssl_);
  if (dialCrl_) dialCrl_->refresh(*dial_);  // a revoked child is refused by the next tree launch's dial
  TreeServices tree;
  if (gate_) tree = {&*gate_, &*dial_, options_.testHoldTreeLaunches};
  tree.stores = &*stores_;
  auto session = std::make_shared<Session>(
      id, std::make_unique<TlsConnection>(TlsConnection::SslStream(std::move(socket), ssl_)), peer, sessions_,
      table_, handler_, sessionTiming(options_), tree);
  sessions_.start(std::move(session));
}

void AgentServer::awaitSignal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    DSRUN_LOG(INFO) << "received signal " << signal << ", shutting down";
    shutdown();
    if (shutdowns_ < 2) awaitSignal();
  });
}

void AgentServer::shutdown() {
  DSRUN_CHECK_THREAD(thread_);
  ++shutdowns_;
  if (shutdowns_ == 1) {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    for (auto& entry : sieving_) entry.second->cancel();
    sieving_.clear();
    sessions_.drainAll();
    table_.stopAll([this] {
      DSRUN_LOG(INFO) << "no rank left, exiting";
      sessions_.stopAll("");
      reaper_.close();
      boost::system::error_code ignoredToo;
      signals_.cancel(ignoredToo);
    });
  } else {
    DSRUN_LOG(WARN) << "second shutdown request, killing every rank now";
    table_.killAll();
  }
}

}  // namespace dsrun::agent
