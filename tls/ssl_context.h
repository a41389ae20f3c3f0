#pragma once
// Boost.Asio SSL contexts for the agent protocol: TLS 1.2 or newer, mutual authentication against
// the cluster CA of a TLS directory (see tls_directory.h).

#include <boost/asio/ssl/context.hpp>
#include <string>

namespace dsrun::tls {

enum class Role { Server, Client };

/// A context that presents <dir>/cert.pem + key.pem and accepts only peers whose certificate chains
/// to <dir>/ca.pem (a peer without a certificate is refused in the handshake). Throws ConfigError
/// naming `flag` and the file if the directory is incomplete or a file does not load.
boost::asio::ssl::context makeSslContext(const std::string& dir, Role role, const std::string& flag = "--tls_dir");

/// One line describing why a TLS handshake failed, e.g. "certificate verify failed" (OpenSSL's
/// reason string for `ec` when it carries one, otherwise ec.message()).
std::string describeTlsError(const boost::system::error_code& ec);

}  // namespace dsrun::tls
