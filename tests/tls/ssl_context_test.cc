#include "tls/ssl_context.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <optional>

#include "common/error.h"
#include "tests/common/temp_dir.h"
#include "tests/tls/test_pki.h"
#include "tls/certificate_issuer.h"
#include "tls/crl_reloader.h"
#include "tls/tls_directory.h"

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using asio::ip::tcp;
using Catch::Matchers::Contains;
using namespace dsrun::tls;

namespace {

struct HandshakeResult {
  boost::system::error_code server;
  boost::system::error_code client;
  std::string serverWhy;  ///< describeHandshakeFailure() on the server's side, if it failed
  bool serverSawNode = false;  ///< after a handshake the server accepted: peerIsNode()
};

/// Runs one TLS handshake over loopback TCP between the two contexts, stepping the loop until both
/// sides have finished. With `dialled` set, the client expects the server to be that host
/// (expectServerName), as the launcher does; `clientWhy` then gets describeHandshakeFailure().
HandshakeResult handshake(ssl::context& serverCtx, ssl::context& clientCtx, const std::string& dialled = "",
                          std::string* clientWhy = nullptr) {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  ssl::stream<tcp::socket> server(io, serverCtx);
  ssl::stream<tcp::socket> client(io, clientCtx);
  std::optional<boost::system::error_code> serverDone, clientDone;
  std::string serverWhy;
  bool serverSawNode = false;
  acceptor.async_accept(server.lowest_layer(), [&](boost::system::error_code ec) {
    if (ec) {
      serverDone = ec;
      return;
    }
    server.async_handshake(ssl::stream_base::server, [&](boost::system::error_code hec) {
      serverDone = hec;
      if (!hec) serverSawNode = peerIsNode(server.native_handle());
      if (hec) serverWhy = describeHandshakeFailure(server.native_handle(), hec);
      // Closing lets the client see the refusal instead of waiting for more handshake bytes.
      if (hec) server.lowest_layer().close();
    });
  });
  client.lowest_layer().async_connect(acceptor.local_endpoint(), [&](boost::system::error_code ec) {
    if (ec) {
      clientDone = ec;
      return;
    }
    if (!dialled.empty()) expectServerName(client.native_handle(), dialled);
    client.async_handshake(ssl::stream_base::client, [&](boost::system::error_code hec) {
      clientDone = hec;
      if (hec && clientWhy != nullptr) *clientWhy = describeHandshakeFailure(client.native_handle(), hec);
      if (hec) client.lowest_layer().close();
    });
  });
  while ((!serverDone || !clientDone) && io.run_one() > 0) {
  }
  // In TLS 1.3 the client finishes before the server has judged the client's certificate; a
  // refusal then reaches the client as an alert on its first read.
  if (serverDone && *serverDone && clientDone && !*clientDone) {
    char byte;
    boost::system::error_code readEc;
    client.read_some(asio::buffer(&byte, 1), readEc);
    clientDone = readEc;
  }
  REQUIRE(serverDone.has_value());
  REQUIRE(clientDone.has_value());
  return {*serverDone, *clientDone, serverWhy, serverSawNode};
}

/// A context presenting `files`' certificate whatever its role, checking nothing about the peer:
/// what someone holding a stolen key could build, without makeSslContext's checks.
ssl::context handMadeContext(const TlsFiles& files, ssl::context::method method) {
  ssl::context ctx(method);
  ctx.use_certificate_chain_file(files.cert);
  ctx.use_private_key_file(files.key, ssl::context::pem);
  ctx.set_verify_mode(ssl::verify_none);
  return ctx;
}

}  // namespace

TEST_CASE("the launcher and an agent holding a node certificate for the dialled host shake hands", "[tls]") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  auto serverCtx = makeSslContext(pki.node("worker-1", {"127.0.0.1"}), Role::Server);
  auto clientCtx = makeSslContext(pki.launcher(), Role::Client);
  for (const char* dialled : {"worker-1", "WORKER-1", "127.0.0.1"}) {
    CAPTURE(dialled);
    auto result = handshake(serverCtx, clientCtx, dialled);
    CHECK(!result.server);
    CHECK(!result.client);
  }
}

TEST_CASE("the launcher refuses an agent whose certificate names another host", "[tls]") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  auto serverCtx = makeSslContext(pki.node("worker-2", {"10.0.0.12"}), Role::Server);
  auto clientCtx = makeSslContext(pki.launcher(), Role::Client);
  std::string why;
  auto result = handshake(serverCtx, clientCtx, "worker-1", &why);
  REQUIRE(result.client);
  CHECK_THAT(why, Contains("certificate verify failed: hostname mismatch") &&
                      Contains("the peer presented CN=dsrun node worker-2 (DNS:worker-2, IP:10.0.0.12)"));
  result = handshake(serverCtx, clientCtx, "10.0.0.11", &why);
  REQUIRE(result.client);
  CHECK_THAT(why, Contains("IP address mismatch"));
}

TEST_CASE("an agent accepts a tree parent's node certificate and knows it for a node, and a launcher's for a "
          "launcher", "[tls][tree]") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  auto serverCtx = makeSslContext(pki.node("worker-1"), Role::Server);
  // The parent agent dials its child with its own node certificate, checking the child's name.
  auto parentCtx = makeSslContext(pki.node("worker-2"), Role::TreeClient);
  auto result = handshake(serverCtx, parentCtx, "worker-1");
  CHECK_FALSE(result.server);
  CHECK_FALSE(result.client);
  CHECK(result.serverSawNode);  // the Session lets such a peer do nothing but hand over a signed tree launch
  auto launcherCtx = makeSslContext(pki.launcher(), Role::Client);
  result = handshake(serverCtx, launcherCtx, "worker-1");
  CHECK_FALSE(result.server);
  CHECK_FALSE(result.serverSawNode);
  // The parent refuses a child whose certificate names another host.
  std::string why;
  result = handshake(serverCtx, parentCtx, "worker-3", &why);
  REQUIRE(result.client);
  CHECK_THAT(why, Contains("hostname mismatch"));
}

TEST_CASE("a tree parent refuses a launcher certificate posing as its child's agent", "[tls][tree]") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  auto rogue = handMadeContext(tlsFiles(pki.launcher()), ssl::context::tls_server);
  auto parentCtx = makeSslContext(pki.node("worker-2"), Role::TreeClient);
  std::string why;
  auto result = handshake(rogue, parentCtx, "", &why);
  REQUIRE(result.client);
  CHECK_THAT(why, Contains("unsuitable certificate purpose"));
  REQUIRE_THROWS_WITH(makeSslContext(pki.launcher(), Role::TreeClient), Contains("is the launcher's certificate"));
}

TEST_CASE("the launcher's certificate used as a server is refused by the launcher", "[tls]") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  auto rogue = handMadeContext(tlsFiles(pki.launcher()), ssl::context::tls_server);
  auto clientCtx = makeSslContext(pki.launcher(), Role::Client);
  std::string why;
  // Even without a name to match, the role alone refuses it.
  auto result = handshake(rogue, clientCtx, "", &why);
  REQUIRE(result.client);
  CHECK_THAT(why, Contains("unsuitable certificate purpose"));
}

TEST_CASE("makeSslContext refuses a directory for the other role, saying which one to use", "[tls]") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  REQUIRE_THROWS_WITH(makeSslContext(pki.launcher(), Role::Server),
                      Contains("is the launcher's certificate, not a node's") && Contains("--make_node_cert"));
  REQUIRE_THROWS_WITH(makeSslContext(pki.node("n"), Role::Client), Contains("is a node's certificate"));
}

TEST_CASE("makeSslContext refuses a shared-certificate directory of an older dsrun with a hint to regenerate",
          "[tls]") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  const std::string old = pki.legacy("old");
  for (Role role : {Role::Server, Role::Client}) {
    REQUIRE_THROWS_AS(makeSslContext(old, role), dsrun::ConfigError);
    REQUIRE_THROWS_WITH(makeSslContext(old, role), Contains("--tls_dir '" + old + "': made by an older dsrun") &&
                                                       Contains("dsrun --make_node_cert NEWDIR"));
  }
}

TEST_CASE("a peer holding an old shared certificate of the same CA is refused in either role", "[tls]") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  const std::string old = pki.legacy("old");
  // A node directory issued from the old CA by hand (makeNodeDirectory refuses old directories).
  const TlsFiles oldFiles = tlsFiles(old);
  auto shared = handMadeContext(oldFiles, ssl::context::tls_client);
  // The other side trusts the old CA but holds a proper single-role certificate.
  dsrun::tls::PKeyPtr caKey = readPrivateKey(oldFiles.caKey, "test");
  dsrun::tls::X509Ptr ca = readCertificate(oldFiles.caCert, "test");
  dsrun::tls::PKeyPtr key = makeKey();
  dsrun::tls::X509Ptr server =
      issueCertificate({CertKind::Server, "n", {"n"}, {}}, key.get(), ca.get(), caKey.get());
  const std::string nodeDir = tmp.path() + "/old-node";
  makeDirectories(nodeDir);
  writeNewFile(nodeDir + "/ca.pem", certificatePem(ca.get()), 0644);
  writeNewFile(nodeDir + "/cert.pem", certificatePem(server.get()), 0644);
  writeNewFile(nodeDir + "/key.pem", privateKeyPem(key.get()), 0600);
  auto serverCtx = makeSslContext(nodeDir, Role::Server);
  auto result = handshake(serverCtx, shared);
  REQUIRE(result.server);
  CHECK_THAT(result.serverWhy, Contains("certificate verify failed: unsuitable certificate purpose"));
}

TEST_CASE("a revoked node certificate is refused by the launcher", "[tls]") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  const std::string node = pki.node("worker-1");
  auto serverCtx = makeSslContext(node, Role::Server);
  revokeCertificate(pki.launcher(), tlsFiles(node).cert);
  auto clientCtx = makeSslContext(pki.launcher(), Role::Client);
  std::string why;
  auto result = handshake(serverCtx, clientCtx, "worker-1", &why);
  REQUIRE(result.client);
  CHECK_THAT(why, Contains("certificate revoked") && Contains("CN=dsrun node worker-1"));
  // Another node of the same CA is still accepted.
  auto otherCtx = makeSslContext(pki.node("worker-2"), Role::Server);
  result = handshake(otherCtx, clientCtx, "worker-2");
  CHECK(!result.client);
}

TEST_CASE("a revoked launcher certificate is refused by an agent once crl.pem reaches the node", "[tls]") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  const std::string node = pki.node("worker-1");
  auto serverCtx = makeSslContext(node, Role::Server);
  CrlReloader reloader(node, "--tls_dir");
  auto clientCtx = makeSslContext(pki.launcher(), Role::Client);
  CHECK_FALSE(reloader.refresh(serverCtx));  // unchanged: nothing to do
  REQUIRE(!handshake(serverCtx, clientCtx, "worker-1").server);

  revokeCertificate(pki.launcher(), tlsFiles(pki.launcher()).cert);
  std::filesystem::copy_file(tlsFiles(pki.launcher()).crl, tmp.path() + "/crl.new");
  std::filesystem::rename(tmp.path() + "/crl.new", tlsFiles(node).crl);
  CHECK(reloader.refresh(serverCtx));
  auto result = handshake(serverCtx, clientCtx, "worker-1");
  REQUIRE(result.server);
  CHECK_THAT(result.serverWhy, Contains("certificate revoked"));
  REQUIRE(result.client);
  CHECK_THAT(describeTlsError(result.client), Contains("certificate revoked"));
}

TEST_CASE("CrlReloader keeps the loaded list when the new one is broken or removed", "[tls]") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  testing::TestPki other(tmp.path() + "/other");
  const std::string node = pki.node("worker-1");
  revokeCertificate(pki.launcher(), tlsFiles(pki.launcher()).cert);
  std::filesystem::copy_file(tlsFiles(pki.launcher()).crl, tlsFiles(node).crl,
                             std::filesystem::copy_options::overwrite_existing);
  auto serverCtx = makeSslContext(node, Role::Server);
  CrlReloader reloader(node, "--tls_dir");
  auto clientCtx = makeSslContext(pki.launcher(), Role::Client);
  // Another CA's list (the launcher's certificate is not on it), then none at all: still refused.
  std::filesystem::copy_file(tlsFiles(other.launcher()).crl, tlsFiles(node).crl,
                             std::filesystem::copy_options::overwrite_existing);
  CHECK_FALSE(reloader.refresh(serverCtx));
  CHECK(handshake(serverCtx, clientCtx, "worker-1").server);
  std::filesystem::remove(tlsFiles(node).crl);
  CHECK_FALSE(reloader.refresh(serverCtx));
  CHECK(handshake(serverCtx, clientCtx, "worker-1").server);
}

TEST_CASE("makeSslContext refuses a crl.pem that the CA did not sign", "[tls]") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  testing::TestPki other(tmp.path() + "/other");
  const std::string node = pki.node("worker-1");
  std::filesystem::copy_file(tlsFiles(other.launcher()).crl, tlsFiles(node).crl,
                             std::filesystem::copy_options::overwrite_existing);
  REQUIRE_THROWS_WITH(makeSslContext(node, Role::Server),
                      Contains(tlsFiles(node).crl + " is not signed by the CA of " + tlsFiles(node).caCert));
}

TEST_CASE("the server refuses a client whose certificate comes from another CA", "[tls]") {
  TempDir tmp;
  testing::TestPki cluster(tmp.path() + "/cluster");
  testing::TestPki rogue(tmp.path() + "/rogue");
  auto serverCtx = makeSslContext(cluster.node("n"), Role::Server);
  // The rogue client holds a launcher certificate of its own CA and does not check the server.
  auto rogueCtx = handMadeContext(tlsFiles(rogue.launcher()), ssl::context::tls_client);
  auto result = handshake(serverCtx, rogueCtx);
  REQUIRE(result.server);
  CHECK_THAT(describeTlsError(result.server), Contains("certificate verify failed"));
}

TEST_CASE("the server refuses a client that presents no certificate", "[tls]") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  auto serverCtx = makeSslContext(pki.node("n"), Role::Server);
  ssl::context anonymous(ssl::context::tls_client);
  anonymous.set_verify_mode(ssl::verify_none);
  auto result = handshake(serverCtx, anonymous);
  REQUIRE(result.server);
  CHECK_THAT(describeTlsError(result.server), Contains("peer did not return a certificate"));
}

TEST_CASE("the client refuses a server whose certificate comes from another CA", "[tls]") {
  TempDir tmp;
  testing::TestPki cluster(tmp.path() + "/cluster");
  testing::TestPki rogue(tmp.path() + "/rogue");
  auto rogueServer = handMadeContext(tlsFiles(rogue.node("n")), ssl::context::tls_server);
  auto clientCtx = makeSslContext(cluster.launcher(), Role::Client);
  auto result = handshake(rogueServer, clientCtx, "n");
  REQUIRE(result.client);
  CHECK_THAT(describeTlsError(result.client), Contains("certificate verify failed"));
}

TEST_CASE("the server refuses a client limited to TLS 1.1", "[tls]") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  auto serverCtx = makeSslContext(pki.node("n"), Role::Server);
  auto oldCtx = makeSslContext(pki.launcher(), Role::Client);
  SSL_CTX_set_max_proto_version(oldCtx.native_handle(), TLS1_1_VERSION);
  auto result = handshake(serverCtx, oldCtx);
  CHECK(result.server);
  CHECK(result.client);
}

TEST_CASE("makeSslContext reports an incomplete TLS directory by flag and file", "[tls]") {
  TempDir tmp;
  REQUIRE_THROWS_AS(makeSslContext(tmp.path(), Role::Server), dsrun::ConfigError);
  REQUIRE_THROWS_WITH(makeSslContext(tmp.path(), Role::Client, "--tls_dir"), Contains("--tls_dir '"));
}
