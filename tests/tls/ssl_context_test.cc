#include "tls/ssl_context.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <catch2/catch.hpp>
#include <optional>

#include "common/error.h"
#include "tests/common/temp_dir.h"
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
};

/// Runs one TLS handshake over loopback TCP between the two contexts, stepping the loop until both
/// sides have finished.
HandshakeResult handshake(ssl::context& serverCtx, ssl::context& clientCtx) {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  ssl::stream<tcp::socket> server(io, serverCtx);
  ssl::stream<tcp::socket> client(io, clientCtx);
  std::optional<boost::system::error_code> serverDone, clientDone;
  acceptor.async_accept(server.lowest_layer(), [&](boost::system::error_code ec) {
    if (ec) {
      serverDone = ec;
      return;
    }
    server.async_handshake(ssl::stream_base::server, [&](boost::system::error_code hec) {
      serverDone = hec;
      // Closing lets the client see the refusal instead of waiting for more handshake bytes.
      if (hec) server.lowest_layer().close();
    });
  });
  client.lowest_layer().async_connect(acceptor.local_endpoint(), [&](boost::system::error_code ec) {
    if (ec) {
      clientDone = ec;
      return;
    }
    client.async_handshake(ssl::stream_base::client, [&](boost::system::error_code hec) {
      clientDone = hec;
      if (hec) client.lowest_layer().close();
    });
  });
  while ((!serverDone || !clientDone) && io.run_one() > 0) {
  }
  REQUIRE(serverDone.has_value());
  REQUIRE(clientDone.has_value());
  return {*serverDone, *clientDone};
}

}  // namespace

TEST_CASE("peers holding certificates of the same CA complete a mutual TLS handshake", "[tls]") {
  TempDir tmp;
  makeTlsDirectory(tmp.path());
  auto serverCtx = makeSslContext(tmp.path(), Role::Server);
  auto clientCtx = makeSslContext(tmp.path(), Role::Client);
  auto result = handshake(serverCtx, clientCtx);
  CHECK(!result.server);
  CHECK(!result.client);
}

TEST_CASE("the server refuses a client whose certificate comes from another CA", "[tls]") {
  TempDir tmp;
  makeTlsDirectory(tmp.path() + "/cluster");
  makeTlsDirectory(tmp.path() + "/rogue");
  auto serverCtx = makeSslContext(tmp.path() + "/cluster", Role::Server);
  // The rogue client trusts the cluster CA (it may have stolen ca.pem) but holds its own certificate.
  auto rogueCtx = makeSslContext(tmp.path() + "/rogue", Role::Client);
  rogueCtx.load_verify_file(tmp.path() + "/cluster/ca.pem");
  auto result = handshake(serverCtx, rogueCtx);
  REQUIRE(result.server);
  CHECK_THAT(describeTlsError(result.server), Contains("certificate verify failed"));
  // In TLS 1.3 the client's handshake completes before the server judges its certificate; the
  // client learns of the refusal from its first read (the agent tests cover that).
}

TEST_CASE("the server refuses a client that presents no certificate", "[tls]") {
  TempDir tmp;
  makeTlsDirectory(tmp.path());
  auto serverCtx = makeSslContext(tmp.path(), Role::Server);
  ssl::context anonymous(ssl::context::tls_client);
  anonymous.set_verify_mode(ssl::verify_none);
  auto result = handshake(serverCtx, anonymous);
  REQUIRE(result.server);
  CHECK_THAT(describeTlsError(result.server), Contains("peer did not return a certificate"));
}

TEST_CASE("the client refuses a server whose certificate comes from another CA", "[tls]") {
  TempDir tmp;
  makeTlsDirectory(tmp.path() + "/cluster");
  makeTlsDirectory(tmp.path() + "/rogue");
  auto rogueServer = makeSslContext(tmp.path() + "/rogue", Role::Server);
  rogueServer.load_verify_file(tmp.path() + "/cluster/ca.pem");
  auto clientCtx = makeSslContext(tmp.path() + "/cluster", Role::Client);
  auto result = handshake(rogueServer, clientCtx);
  REQUIRE(result.client);
  CHECK_THAT(describeTlsError(result.client), Contains("certificate verify failed"));
}

TEST_CASE("the server refuses a client limited to TLS 1.1", "[tls]") {
  TempDir tmp;
  makeTlsDirectory(tmp.path());
  auto serverCtx = makeSslContext(tmp.path(), Role::Server);
  auto oldCtx = makeSslContext(tmp.path(), Role::Client);
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
