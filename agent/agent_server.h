#pragma once
// AgentServer: the dsrun-agent daemon (the Asio HTTP server's `server`): owns the TLS acceptor, the
// signal_set for SIGTERM/SIGINT, the SessionManager, the JobTable and the Reaper. Everything runs on the one
// thread that calls io.run(); run() returns after a shutdown once every rank is gone.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "agent/job_table.h"
#include "agent/probe_sieve.h"
#include "agent/reaper.h"
#include "agent/request_handler.h"
#include "agent/session.h"
#include "agent/session_manager.h"
#include "agent/store_service.h"
#include "agent/thread_checker.h"
#include "agent/tree_gate.h"
#include "supervision/spawner.h"
#include "tls/crl_reloader.h"

namespace dsrun::agent {

class AgentServer {
 public:
  struct Options {
    boost::asio::ip::tcp::endpoint listen;                ///< address to bind (port 0: any free port)
    std::string hostName;                                 ///< reported in Welcome and in errors
    std::string logDir;                                   ///< base for relative each-rank log dirs
    std::chrono::milliseconds heartbeatTimeout{10000};    ///< silence after which a launcher is lost
    std::chrono::milliseconds killGrace{30000};           ///< default SIGTERM -> SIGKILL delay
    std::chrono::milliseconds handshakeTimeout{10000};    ///< TLS handshake + Hello deadline
    std::chrono::milliseconds drainAfterExit{2000};       ///< how long output may trail a reaped rank
    std::map<std::string, std::string> baseEnv;           ///< environment ranks inherit (the agent's)
    /// Where `ssl` came from: its crl.pem is reloaded when it changes, and tree launches are served with it
    /// (its node certificate dials the children; empty: neither).
    std::string tlsDir;
    bool testHoldTreeLaunches = false;  ///< AgentOptions::testHoldTreeLaunches (tests only)
  };

  /// `ssl` must be a server context from tls::makeSslContext. `spawner` must outlive the server.
  AgentServer(boost::asio::io_context& io, Options options, boost::asio::ssl::context ssl, Spawner& spawner);

  /// Binds, listens and starts accepting. Throws IoError "<addr:port>: bind: <strerror> (...)".
  void start();
  /// The bound address (useful with port 0).
  boost::asio::ip::tcp::endpoint localEndpoint() const;
  /// What SIGTERM does: stop accepting, tell every launcher, stop every job (SIGKILL after the
  /// grace), and let io.run() return once no rank is left. A second call kills every rank at once.
  void shutdown();

  /// For tests: the live sessions and ranks.
  size_t sessionCount() const { return sessions_.size(); }
  size_t liveRankCount() const { return table_.liveRankCount(); }
  size_t pausedStreamCount() const { return table_.pausedStreamCount(); }
  /// Connections closed before their first byte (reachability probes), counted instead of refused.
  uint64_t probeCount() const { return probes_; }

 private:
  void accept();
  void awaitSignal();
  void onFirstByte(uint64_t id, const std::string& peer, ProbeSieve::Verdict verdict,
                   boost::asio::ip::tcp::socket socket);

  boost::asio::io_context& io_;                 ///< the agent's only event loop
  Options options_;                             ///< fixed at construction
  boost::asio::ssl::context ssl_;               ///< server TLS context (mutual auth)
  std::optional<tls::CrlReloader> crl_;         ///< keeps ssl_'s revocation list current
  std::optional<boost::asio::ssl::context> dial_;  ///< this node's certificate as a client, to tree children
  std::optional<tls::CrlReloader> dialCrl_;     ///< keeps dial_'s revocation list current
  std::optional<TreeGate> gate_;                ///< admits tree launches (with tlsDir only)
  std::optional<StoreService> stores_;          ///< --rendezvous agent stores; outlives the sessions that use it
  boost::asio::ip::tcp::acceptor acceptor_;     ///< listening socket
  boost::asio::signal_set signals_;             ///< SIGTERM, SIGINT
  RequestHandler handler_;                      ///< pure protocol logic
  SessionManager sessions_;                     ///< live sessions
  JobTable table_;                              ///< jobs and their ranks
  Reaper reaper_;                               ///< tells table_ of exited ranks; after it: destroyed first
  uint64_t nextSessionId_ = 1;                  ///< session ids are never reused
  std::map<uint64_t, std::shared_ptr<ProbeSieve>> sieving_;  ///< accepted, waiting for a first byte
  uint64_t probes_ = 0;                         ///< connections closed before their first byte
  int shutdowns_ = 0;                           ///< shutdown() calls so far
  ThreadChecker thread_;                        ///< loop-thread confinement
};

}  // namespace dsrun::agent
