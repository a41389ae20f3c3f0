// ProbeSieve over real loopback TCP sockets: what it decides about a connection from its first byte
// (or its absence), stepped on one io_context by the test thread.
#include "agent/probe_sieve.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <optional>

#include "tests/agent/run_until.h"

using namespace dsrun::agent;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using asio::ip::tcp;
using testing::runUntil;

namespace {

/// A listener on 127.0.0.1, a client connected to it, and the accepted end handed to a ProbeSieve.
struct Pair {
  asio::io_context io;
  tcp::acceptor acceptor{io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
  tcp::socket client{io};
  std::optional<ProbeSieve::Verdict> verdict;
  std::optional<tcp::socket> handedOn;
  std::shared_ptr<ProbeSieve> sieve;

  explicit Pair(std::chrono::milliseconds deadline) {
    client.connect(acceptor.local_endpoint());
    sieve = ProbeSieve::start(acceptor.accept(), deadline, [this](ProbeSieve::Verdict v, tcp::socket s) {
      verdict = v;
      handedOn.emplace(std::move(s));
    });
  }
};

}  // namespace

TEST_CASE("a connection closed before its first byte is a probe, and its socket is closed", "[agent][probe]") {
  Pair p(30s);
  p.client.close();
  runUntil(p.io, [&] { return p.verdict.has_value(); }, "the sieve's verdict");
  CHECK(*p.verdict == ProbeSieve::Verdict::Probe);
  CHECK_FALSE(p.handedOn->is_open());
}

TEST_CASE("a connection reset before its first byte is a probe too", "[agent][probe]") {
  Pair p(30s);
  p.client.set_option(asio::socket_base::linger(true, 0));  // close() sends RST instead of FIN
  p.client.close();
  runUntil(p.io, [&] { return p.verdict.has_value(); }, "the sieve's verdict");
  CHECK(*p.verdict == ProbeSieve::Verdict::Probe);
}

TEST_CASE("a connection that sends any byte is handed on with that byte still unread", "[agent][probe]") {
  // Not TLS at all: the handshake, not the sieve, must refuse it (and log it as a failed handshake).
  Pair p(30s);
  asio::write(p.client, asio::buffer(std::string("GET / HTTP/1.0\r\n\r\n")));
  p.client.close();  // the bytes arrive before the close: still a talker, not a probe
  runUntil(p.io, [&] { return p.verdict.has_value(); }, "the sieve's verdict");
  REQUIRE(*p.verdict == ProbeSieve::Verdict::Talker);
  REQUIRE(p.handedOn->is_open());
  char first[3] = {};
  REQUIRE(asio::read(*p.handedOn, asio::buffer(first)) == 3);
  CHECK(std::string(first, 3) == "GET");
}

TEST_CASE("a connection that stays silent past the deadline is closed as silent", "[agent][probe]") {
  Pair p(20ms);
  runUntil(p.io, [&] { return p.verdict.has_value(); }, "the sieve's verdict");
  CHECK(*p.verdict == ProbeSieve::Verdict::Silent);
  CHECK_FALSE(p.handedOn->is_open());
}

TEST_CASE("a cancelled sieve closes the connection and never answers", "[agent][probe]") {
  Pair p(1h);
  p.sieve->cancel();
  p.io.run();  // returns only once the sieve's wait and timer are gone (an hour otherwise)
  CHECK_FALSE(p.verdict.has_value());
  char byte = 0;
  boost::system::error_code ec;
  p.client.read_some(asio::buffer(&byte, 1), ec);
  CHECK(ec == asio::error::eof);
}
