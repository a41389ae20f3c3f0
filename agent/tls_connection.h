#pragma once
// TlsConnection: a Connection over an accepted TCP socket with mutual TLS. The handshake refuses a peer
// without a certificate of the cluster's CA (the context's verify settings, tls/ssl_context.h).

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>

#include "agent/connection.h"

namespace dsrun::agent {

class TlsConnection : public Connection {
 public:
  using SslStream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

  explicit TlsConnection(SslStream stream);

  boost::asio::any_io_executor executor() override;
  void handshake(HandshakeHandler done) override;
  void readSome(boost::asio::mutable_buffer buffer, IoHandler done) override;
  void write(boost::asio::const_buffer buffer, IoHandler done) override;
  bool isDisconnect(const boost::system::error_code& ec) const override;
  std::string describe(const boost::system::error_code& ec) const override;
  bool peerIsNode() override;
  bool peerNames(const std::string& host) override;
  std::string localAddress() override;
  size_t bytesWaiting() override;
  void close() override;

 private:
  SslStream stream_;  ///< the TLS connection
};

}  // namespace dsrun::agent
