#include "agent/tls_connection.h"

#include <openssl/ssl.h>

#include <algorithm>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/write.hpp>

#include "tls/certificate_issuer.h"
#include "tls/ssl_context.h"
#include "tls/tree_signature.h"

namespace dsrun::agent {
namespace {

/// The peer's (verified) certificate for the log: CN and serial, the serial being what
/// `dsrun --revoke_cert` takes away.
std::string peerCertificate(SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return "?";
  std::string text = tls::describeCertificate(cert);
  X509_free(cert);
  return text;
}

}  // namespace

TlsConnection::TlsConnection(SslStream stream) : stream_(std::move(stream)) {}

boost::asio::any_io_executor TlsConnection::executor() { return stream_.get_executor(); }

void TlsConnection::handshake(HandshakeHandler done) {
  stream_.async_handshake(boost::asio::ssl::stream_base::server,
                          [this, done = std::move(done)](const boost::system::error_code& ec) {
                            if (ec) {
                              done(tls::describeHandshakeFailure(stream_.native_handle(), ec), "");
                            } else {
                              done("", peerCertificate(stream_.native_handle()));
                            }
                          });
}

void TlsConnection::readSome(boost::asio::mutable_buffer buffer, IoHandler done) {
  stream_.async_read_some(buffer, std::move(done));
}

void TlsConnection::write(boost::asio::const_buffer buffer, IoHandler done) {
  boost::asio::async_write(stream_, buffer, std::move(done));
}

bool TlsConnection::isDisconnect(const boost::system::error_code& ec) const {
  return ec == boost::asio::error::eof || ec == boost::asio::ssl::error::stream_truncated;
}

std::string TlsConnection::describe(const boost::system::error_code& ec) const { return tls::describeTlsError(ec); }

bool TlsConnection::peerIsNode() { return tls::peerIsNode(stream_.native_handle()); }

bool TlsConnection::peerNames(const std::string& host) {
  X509* cert = SSL_get0_peer_certificate(stream_.native_handle());
  return cert != nullptr && tls::certificateNames(cert, host);
}

size_t TlsConnection::bytesWaiting() {
  boost::system::error_code ec;
  const size_t inSocket = stream_.lowest_layer().available(ec);
  const int inTls = ::SSL_pending(stream_.native_handle());
  return (ec ? 0 : inSocket) + static_cast<size_t>(std::max(inTls, 0));
}

std::string TlsConnection::localAddress() {
  boost::system::error_code ec;
  boost::asio::ip::address address = stream_.lowest_layer().local_endpoint(ec).address();
  if (ec) return "";
  // A dual-stack listener sees IPv4 clients as ::ffff:a.b.c.d; ranks need the plain IPv4 form.
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    address = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6());
  }
  return address.to_string();
}

void TlsConnection::close() {
  boost::system::error_code ignored;
  stream_.lowest_layer().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  stream_.lowest_layer().close(ignored);
}

}  // namespace dsrun::agent
