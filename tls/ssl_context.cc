#include "tls/ssl_context.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <boost/asio/ssl/error.hpp>

#include "common/error.h"
#include "common/logging.h"
#include "common/strings.h"
#include "tls/certificate_issuer.h"
#include "tls/openssl_io.h"
#include "tls/revocation.h"
#include "tls/tls_directory.h"

namespace dsrun::tls {

namespace ssl = boost::asio::ssl;

namespace {

bool nodeOnly(const CertUsage& usage) { return usage.server && !usage.client; }

/// Runs after OpenSSL's own checks of each certificate. OpenSSL's purpose check lets through a
/// certificate good for both roles (what older dsrun versions issued to every node), so the leaf
/// must be for one role only: a client accepts only a node, an agent a launcher or a node (a tree parent,
/// which the Session confines to a signed tree launch); a certificate for both roles is refused everywhere.
int verifyPeerRole(int preverifyOk, X509_STORE_CTX* store) {
  if (X509_STORE_CTX_get_error_depth(store) != 0) return preverifyOk;
  auto* ssl = static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  const CertUsage usage = certificateUsage(X509_STORE_CTX_get_current_cert(store));
  const bool server = SSL_is_server(ssl) == 1;
  if (preverifyOk != 1) {
    // The agent's purpose check (ssl_client) refuses a node certificate; only that error is waived, and only
    // for a node-only leaf: its chain, signature and revocation are still checked (and reported) as any other.
    if (server && X509_STORE_CTX_get_error(store) == X509_V_ERR_INVALID_PURPOSE && nodeOnly(usage)) {
      X509_STORE_CTX_set_error(store, X509_V_OK);
      return 1;
    }
    return preverifyOk;
  }
  const bool ok = server ? (usage.client && !usage.server) || nodeOnly(usage) : nodeOnly(usage);
  if (ok) return 1;
  X509_STORE_CTX_set_error(store, X509_V_ERR_INVALID_PURPOSE);
  return 0;
}

/// Refuses a cert.pem made for the other role or by an older dsrun, with a hint how to make the
/// right one.
void checkOwnRole(const std::string& dir, Role role, const std::string& flag) {
  const TlsFiles files = tlsFiles(dir);
  const std::string context = strCat(flag, " '", dir, "'");
  const CertUsage usage = certificateUsage(readCertificate(files.cert, context).get());
  if (usage.client && usage.server) {
    throw ConfigError(strCat(context, ": made by an older dsrun (one certificate shared by every node, and the CA key "
                             "copied to all of them); it is no longer accepted\n  hint: make a new directory with "
                             "'dsrun --make_tls NEWDIR', give each node its own with 'dsrun --make_node_cert NEWDIR "
                             "--host NAME --out NODEDIR', and restart the agents with --tls_dir NODEDIR "
                             "(docs/security.md)"));
  }
  if (role != Role::Client && !usage.server) {
    throw ConfigError(strCat(context, ": ", files.cert,
                             " is the launcher's certificate, not a node's\n  hint: issue this node its own with "
                             "'dsrun --make_node_cert DIR --host NAME --out NODEDIR' and pass --tls_dir NODEDIR"));
  }
  if (role == Role::Client && !usage.client) {
    throw ConfigError(strCat(context, ": ", files.cert,
                             " is a node's certificate, not the launcher's\n  hint: pass the directory "
                             "'dsrun --make_tls' made"));
  }
  if (role == Role::Server && pathExists(files.caKey)) {
    DSRUN_LOG(WARN) << context << ": holds the CA key " << files.caKey
                    << "; whoever reads it can mint certificates for the whole cluster (a node needs only ca.pem, "
                       "crl.pem, cert.pem and key.pem)";
  }
}

}  // namespace

X509_STORE* makeTrustStore(const std::string& dir, const std::string& flag) {
  const TlsFiles files = tlsFiles(dir);
  const std::string context = strCat(flag, " '", dir, "'");
  X509Ptr ca = readCertificate(files.caCert, context);
  std::unique_ptr<X509_STORE, OpensslDeleter<X509_STORE, X509_STORE_free>> store(X509_STORE_new());
  if (!store || X509_STORE_add_cert(store.get(), ca.get()) != 1) {
    throw ConfigError(strCat(context, ": cannot use ", files.caCert, ": ", opensslError()));
  }
  if (pathExists(files.crl)) {
    X509CrlPtr crl = readCrl(files.crl, context);
    checkCrlIssuer(crl.get(), ca.get(), context, files.crl, files.caCert);
    if (X509_STORE_add_crl(store.get(), crl.get()) != 1) {
      throw ConfigError(strCat(context, ": cannot use ", files.crl, ": ", opensslError()));
    }
    // Leaf only: the chain is CA -> leaf, and the CA itself is the trust anchor.
    X509_STORE_set_flags(store.get(), X509_V_FLAG_CRL_CHECK);
  }
  return store.release();
}

ssl::context makeSslContext(const std::string& dir, Role role, const std::string& flag) {
  checkTlsDirectory(dir, flag);
  checkOwnRole(dir, role, flag);
  const TlsFiles files = tlsFiles(dir);
  ssl::context ctx(role == Role::Server ? ssl::context::tls_server : ssl::context::tls_client);
  const bool server = role == Role::Server;
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                  ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  // A session cache would let a resumed session skip client verification bookkeeping; not worth it.
  SSL_CTX_set_session_cache_mode(ctx.native_handle(), SSL_SESS_CACHE_OFF);
  auto load = [&](const std::string& path, auto&& action) {
    boost::system::error_code ec;
    action(ec);
    if (ec) throw ConfigError(strCat(flag, " '", dir, "': cannot load ", path, ": ", describeTlsError(ec)));
  };
  // Only the CA in ca.pem is trusted, never the system store.
  SSL_CTX_set_cert_store(ctx.native_handle(), makeTrustStore(dir, flag));
  load(files.cert, [&](auto& ec) { ctx.use_certificate_chain_file(files.cert, ec); });
  load(files.key, [&](auto& ec) { ctx.use_private_key_file(files.key, ssl::context::pem, ec); });
  if (SSL_CTX_check_private_key(ctx.native_handle()) != 1) {
    ERR_clear_error();
    throw ConfigError(strCat(flag, " '", dir, "': ", files.key, " does not match ", files.cert));
  }
  SSL_CTX_set_purpose(ctx.native_handle(), server ? X509_PURPOSE_SSL_CLIENT : X509_PURPOSE_SSL_SERVER);
  // A peer must present a certificate; set after set_verify_mode, which would keep Asio's callback.
  SSL_CTX_set_verify(ctx.native_handle(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, verifyPeerRole);
  return ctx;
}

bool peerIsNode(SSL* ssl) {
  X509* cert = SSL_get0_peer_certificate(ssl);
  return cert != nullptr && nodeOnly(certificateUsage(cert));
}

void expectServerName(SSL* ssl, const std::string& host) {
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  // Names come from subjectAltName only (every node certificate has one), never from the CN.
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT | X509_CHECK_FLAG_NO_WILDCARDS);
  if (isIpAddress(host)) {
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
  }
}

std::string describeTlsError(const boost::system::error_code& ec) {
  if (ec.category() == boost::asio::error::get_ssl_category()) {
    const char* reason = ERR_reason_error_string(static_cast<unsigned long>(ec.value()));
    if (reason != nullptr) return reason;
  }
  if (ec == boost::asio::ssl::error::stream_truncated) return "peer closed the connection during the handshake";
  return ec.message();
}

std::string describeHandshakeFailure(SSL* ssl, const boost::system::error_code& ec) {
  std::string out = describeTlsError(ec);
  const long verdict = SSL_get_verify_result(ssl);
  if (verdict == X509_V_OK) return out;
  out += strCat(": ", X509_verify_cert_error_string(verdict));
  // The client keeps the server's chain (leaf first) even when verification fails.
  STACK_OF(X509)* chain = SSL_is_server(ssl) == 1 ? nullptr : SSL_get_peer_cert_chain(ssl);
  if (chain != nullptr && sk_X509_num(chain) > 0) {
    out += strCat(" (the peer presented ", describeCertificate(sk_X509_value(chain, 0)), ")");
  }
  return out;
}

}  // namespace dsrun::tls
