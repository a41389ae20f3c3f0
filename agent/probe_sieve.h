#pragma once
// ProbeSieve: holds a freshly accepted connection until its first byte arrives. A peer that closes
// without sending one is a reachability probe (dsrun's mesh probe, agent/mesh_probe.cc, and dsrun's
// own port checks only open a TCP connection): it is counted and logged at DEBUG, instead of reaching
// the TLS handshake and being logged as a refused handshake on every probe. A connection that sends
// anything, even bytes that are not TLS, goes on to the Session and its handshake unchanged, so a real
// handshake failure is still refused and logged as before. Loop-thread only.

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace dsrun::agent {

class ProbeSieve : public std::enable_shared_from_this<ProbeSieve> {
 public:
  enum class Verdict { Probe, Talker, Silent };
  /// `Talker`: `socket` holds the connection for the handshake; otherwise it is closed.
  using Done = std::function<void(Verdict, boost::asio::ip::tcp::socket socket)>;

  /// Waits on `socket` for its first byte, at most `deadline`; then calls `done` once, on the loop,
  /// unless cancel() came first.
  static std::shared_ptr<ProbeSieve> start(boost::asio::ip::tcp::socket socket, std::chrono::milliseconds deadline,
                                           Done done);
  /// Closes the connection at once and never calls `done` (the agent is shutting down).
  void cancel();

 private:
  ProbeSieve(boost::asio::ip::tcp::socket socket, Done done);
  void run(std::chrono::milliseconds deadline);
  void finish(Verdict verdict);

  boost::asio::ip::tcp::socket socket_;  ///< the accepted connection
  boost::asio::steady_timer timer_;      ///< the first byte's deadline
  Done done_;                            ///< empty once called or cancelled
};

}  // namespace dsrun::agent
