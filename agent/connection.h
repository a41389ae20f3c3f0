#pragma once
// Connection: the byte stream a Session talks over, as an interface so the Session is tested against
// a fake (docs/style.md §12). TlsConnection is the agent's one real implementation: mutual TLS over
// TCP. Handlers run on the connection's executor, the agent's loop. Loop-thread only.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <functional>
#include <string>

namespace dsrun::agent {

class Connection {
 public:
  using IoHandler = std::function<void(const boost::system::error_code&, size_t)>;
  /// `failure` empty: the peer is authenticated as `peerIdentity` (for the log); otherwise why not.
  using HandshakeHandler = std::function<void(const std::string& failure, const std::string& peerIdentity)>;

  virtual ~Connection() = default;

  /// The executor every handler runs on (the agent's io_context).
  virtual boost::asio::any_io_executor executor() = 0;
  /// Authenticates the peer before any byte of the protocol is read.
  virtual void handshake(HandshakeHandler done) = 0;
  /// Reads at least one byte into `buffer` (the caller keeps it alive until `done`).
  virtual void readSome(boost::asio::mutable_buffer buffer, IoHandler done) = 0;
  /// Writes all of `buffer` (the caller keeps it alive until `done`); one write in flight at a time.
  virtual void write(boost::asio::const_buffer buffer, IoHandler done) = 0;
  /// True when `ec` from a read means the peer closed the connection (not a failure).
  virtual bool isDisconnect(const boost::system::error_code& ec) const = 0;
  /// One line for a read or write error, for the log.
  virtual std::string describe(const boost::system::error_code& ec) const = 0;
  /// After the handshake: the peer authenticated with a node certificate (a tree parent), not a launcher's.
  virtual bool peerIsNode() = 0;
  /// After the handshake: the peer's certificate names `host` in its subjectAltName.
  virtual bool peerNames(const std::string& host) = 0;
  /// This end's address, the one the peer dialled ("10.0.0.2"); empty when unknown.
  virtual std::string localAddress() = 0;
  /// Closes at once; pending operations complete with an error.
  virtual void close() = 0;
  /// Bytes the peer sent that this side has not read yet (the socket's and TLS's buffers): nonzero when our
  /// loop is behind rather than the peer silent. 0 where the medium cannot tell.
  virtual size_t bytesWaiting() { return 0; }
};

}  // namespace dsrun::agent
