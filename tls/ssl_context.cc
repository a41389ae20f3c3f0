#include "tls/ssl_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/ssl/error.hpp>

#include "common/error.h"
#include "tls/tls_directory.h"

namespace dsrun::tls {

namespace ssl = boost::asio::ssl;

ssl::context makeSslContext(const std::string& dir, Role role, const std::string& flag) {
  checkTlsDirectory(dir, flag);
  const TlsFiles files = tlsFiles(dir);
  ssl::context ctx(role == Role::Server ? ssl::context::tls_server : ssl::context::tls_client);
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
  load(files.caCert, [&](auto& ec) { ctx.load_verify_file(files.caCert, ec); });
  load(files.cert, [&](auto& ec) { ctx.use_certificate_chain_file(files.cert, ec); });
  load(files.key, [&](auto& ec) { ctx.use_private_key_file(files.key, ssl::context::pem, ec); });
  if (SSL_CTX_check_private_key(ctx.native_handle()) != 1) {
    ERR_clear_error();
    throw ConfigError(strCat(flag, " '", dir, "': ", files.key, " does not match ", files.cert));
  }
  // Only the CA in ca.pem is trusted, never the system store; a peer must present a certificate.
  ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  return ctx;
}

std::string describeTlsError(const boost::system::error_code& ec) {
  if (ec.category() == boost::asio::error::get_ssl_category()) {
    const char* reason = ERR_reason_error_string(static_cast<unsigned long>(ec.value()));
    if (reason != nullptr) return reason;
  }
  if (ec == boost::asio::ssl::error::stream_truncated) return "peer closed the connection during the handshake";
  return ec.message();
}

}  // namespace dsrun::tls
