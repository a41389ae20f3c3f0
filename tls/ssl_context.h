#pragma once
// Boost.Asio SSL contexts for the agent protocol: TLS 1.2 or newer, mutual authentication against
// the cluster CA of a TLS directory (see tls_directory.h). The launcher (Client) accepts only node (server)
// certificates whose subjectAltName matches the host it dialled. The agent (Server) accepts launcher
// certificates and, for a tree launch only, node certificates: a parent agent dials its children with its own
// node certificate (TreeClient), and the Session lets such a peer do nothing but deliver a tree launch that a
// launcher signed (peerIsNode; docs/agent.md "Tree launch"). A crl.pem in the directory is honoured by all.

#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <string>

namespace dsrun::tls {

enum class Role {
  Server,      ///< dsrun-agent's listener
  Client,      ///< dsrun dialing its agents, with the launcher certificate
  TreeClient,  ///< dsrun-agent dialing its children in a tree, with its node certificate
};

/// A context that presents <dir>/cert.pem + key.pem and accepts only peers whose certificate chains
/// to <dir>/ca.pem, is not on <dir>/crl.pem (if present), and whose extendedKeyUsage is exactly the
/// other role (a peer without a certificate is refused in the handshake); a Server also accepts a node
/// certificate (a tree parent), which peerIsNode() then tells. Throws ConfigError naming
/// `flag` and the file if the directory is incomplete, a file does not load, cert.pem is not for
/// `role`, or the directory was made by an older dsrun (one certificate for both roles).
boost::asio::ssl::context makeSslContext(const std::string& dir, Role role, const std::string& flag = "--tls_dir");

/// A trust store holding <dir>/ca.pem and, when present, <dir>/crl.pem (with CRL checking on).
/// The caller owns the result (e.g. hands it to SSL_CTX_set_cert_store). Throws ConfigError naming
/// `flag` for a file that does not load or a CRL not signed by the CA.
X509_STORE* makeTrustStore(const std::string& dir, const std::string& flag);

/// Server side, after the handshake: the verified peer presented a node certificate (a tree parent), not a
/// launcher's.
bool peerIsNode(SSL* ssl);

/// Client side, before the handshake of one connection: the server's certificate must name `host`
/// in its subjectAltName (as an IP entry if `host` is an address literal, else as a DNS entry).
void expectServerName(SSL* ssl, const std::string& host);

/// One line describing why a TLS handshake failed, e.g. "certificate verify failed" (OpenSSL's
/// reason string for `ec` when it carries one, otherwise ec.message()).
std::string describeTlsError(const boost::system::error_code& ec);

/// describeTlsError(ec) plus, when certificate verification failed on `ssl`, why ("hostname
/// mismatch", "certificate revoked", "unsupported certificate purpose") and, where OpenSSL kept it,
/// which certificate the peer presented (describeCertificate()).
std::string describeHandshakeFailure(SSL* ssl, const boost::system::error_code& ec);

}  // namespace dsrun::tls
