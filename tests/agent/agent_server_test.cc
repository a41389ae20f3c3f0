// AgentServer over real loopback TLS sockets with real /bin/sh ranks. The test client and the agent
// share one io_context, stepped by the test thread.
#include "agent/agent_server.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/strings.h"
#include "tests/agent/agent_fixture.h"
#include "tests/tls/test_pki.h"
#include "tls/certificate_issuer.h"
#include "tls/ssl_context.h"
#include "tls/tls_directory.h"
#include "proto/rank_env.h"

using Catch::Matchers::Contains;
using namespace dsrun::agent;
using namespace dsrun::wire;
using namespace std::chrono_literals;
using testing::runUntil;
using testing::TestClient;

using testing::alive;
using testing::collect;
using testing::Fixture;
using testing::JobResult;
using testing::launchSh;


TEST_CASE("the agent runs /bin/sh ranks, streams their output and reports exit codes", "[agent][server]") {
  Fixture f;
  auto c = f.welcomedClient();
  c->send(launchSh("job-1", {"echo out-$RANK; echo err-$RANK >&2; exit 0", "printf 'a\\nb'; exit 3"}));
  JobResult r = collect(*c, 2);
  CHECK(r.pid.size() == 2);
  CHECK(r.out[0] == "out-0\n");
  CHECK(r.err[0] == "err-0\n");
  CHECK(r.out[1] == "a\nb");
  CHECK(r.exited[0].exit_code() == 0);
  CHECK(r.exited[1].exit_code() == 3);
  CHECK(r.exited[1].pid() == r.pid[1]);
  runUntil(f.io, [&] { return f.server->liveRankCount() == 0; }, "the job to be forgotten");
}

TEST_CASE("argv, environment and cwd that are not UTF-8 reach the rank byte for byte", "[agent][server]") {
  Fixture f;
  const std::string latin1 = "caf\xe9-\xff\xfe";  // ISO-8859-1: invalid as UTF-8
  const std::string dir = f.tmp.path() + "/d\xe9";
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  auto c = f.welcomedClient();
  Envelope e = launchSh("job-bytes", {"printf '%s|%s|%s' \"$1\" \"$V\" \"$(pwd)\""});
  auto* rank = e.mutable_launch()->mutable_ranks(0);
  rank->add_argv("sh");
  rank->add_argv(latin1);
  dsrun::proto::addEnv(*rank, "V", latin1);
  rank->set_cwd(dir);
  c->send(e);
  JobResult r = collect(*c, 1);
  CHECK(r.exited[0].exit_code() == 0);
  CHECK(r.out[0] == latin1 + "|" + latin1 + "|" + dir);
}

TEST_CASE("a hello of another protocol version is refused naming both versions", "[agent][server]") {
  Fixture f;
  auto c = std::make_unique<TestClient>(f.io, *f.clientCtx);
  REQUIRE_FALSE(c->connect(f.server->localEndpoint()));
  c->hello(1);
  auto reply = c->next();
  REQUIRE(reply.has_value());
  REQUIRE(reply->has_error());
  CHECK(reply->error().message() ==
        "protocol version mismatch: client 'agent test' speaks version 1, this agent speaks version 3");
}

TEST_CASE("the welcome carries the address the client dialled", "[agent][server]") {
  Fixture f;
  auto c = std::make_unique<TestClient>(f.io, *f.clientCtx);
  REQUIRE_FALSE(c->connect(f.server->localEndpoint()));
  c->hello();
  auto w = c->next();
  REQUIRE(w.has_value());
  REQUIRE(w->has_welcome());
  CHECK(w->welcome().host_address() == "127.0.0.1");
  CHECK(w->welcome().agent_host() == "test-node");
}

TEST_CASE("a MASTER_PORT pre-flight names the process holding the port, or picks a free one", "[agent][server][port]") {
  Fixture f;
  auto c = f.welcomedClient();
  // This process holds a port on every address, as a stale rendezvous store would.
  const int held = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(held >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  socklen_t len = sizeof addr;
  REQUIRE(::bind(held, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(held, 1) == 0);
  REQUIRE(::getsockname(held, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const int port = ntohs(addr.sin_port);

  Envelope check;
  check.mutable_port_check()->set_port(static_cast<uint32_t>(port));
  c->send(check);
  auto reply = c->nextWhere([](const Envelope& e) { return e.has_port_check_reply(); }, "the port check reply");
  CHECK(reply.port_check_reply().port() == static_cast<uint32_t>(port));
  CHECK_THAT(reply.port_check_reply().error(),
             Contains(dsrun::strCat("MASTER_PORT ", port, " is already in use on test-node by pid ", ::getpid())));
  ::close(held);

  check.mutable_port_check()->set_port(0);
  c->send(check);
  reply = c->nextWhere([](const Envelope& e) { return e.has_port_check_reply(); }, "the port check reply");
  CHECK(reply.port_check_reply().error().empty());
  CHECK(reply.port_check_reply().port() > 0);
}

TEST_CASE("a mesh probe reports, per target, whether the agent could connect to it", "[agent][server][mesh]") {
  Fixture f;
  auto c = f.welcomedClient();
  // A port nobody listens on: bound, never listening, so a connect is refused.
  const int closed = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  REQUIRE(::bind(closed, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::getsockname(closed, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const std::string listening = dsrun::strCat("127.0.0.1:", f.server->localEndpoint().port());
  const std::string refused = dsrun::strCat("127.0.0.1:", ntohs(addr.sin_port));

  Envelope probe;
  for (const std::string& t : {listening, refused, std::string("no-port")}) probe.mutable_mesh_probe()->add_targets(t);
  probe.mutable_mesh_probe()->set_timeout_ms(5000);
  c->send(probe);
  auto reply = c->nextWhere([](const Envelope& e) { return e.has_mesh_probe_reply(); }, "the mesh probe reply");
  ::close(closed);
  const auto& results = reply.mesh_probe_reply().results();
  REQUIRE(results.size() == 3);
  CHECK(results[0].target() == listening);
  CHECK(results[0].error().empty());
  CHECK(results[1].target() == refused);
  CHECK_THAT(results[1].error(), Contains("Connection refused"));
  CHECK_THAT(results[2].error(), Contains("expected host:port, got 'no-port'"));
}

TEST_CASE("a probe's connection to an agent is counted as a probe, not refused as a failed handshake",
          "[agent][server][mesh]") {
  Fixture f;
  auto c = f.welcomedClient();
  Envelope probe;  // the agent probes itself: the connection the mesh probe opens and closes arrives here
  probe.mutable_mesh_probe()->add_targets(dsrun::strCat("127.0.0.1:", f.server->localEndpoint().port()));
  c->send(probe);
  auto reply = c->nextWhere([](const Envelope& e) { return e.has_mesh_probe_reply(); }, "the mesh probe reply");
  REQUIRE(reply.mesh_probe_reply().results(0).error().empty());
  runUntil(f.io, [&] { return f.server->probeCount() == 1; }, "the probe to be counted");
  CHECK(f.server->sessionCount() == 1);  // the launcher's; the probe never became a session
  auto second = f.welcomedClient();      // and real clients are still served
  CHECK(f.server->probeCount() == 1);
}

TEST_CASE("a SignalRequest terminates the job's ranks and reports the signal", "[agent][server]") {
  Fixture f;
  auto c = f.welcomedClient();
  c->send(launchSh("job-s", {"exec sleep 30", "exec sleep 30"}));
  c->nextWhere([](const Envelope& e) { return e.has_rank_started() && e.rank_started().rank() == 1; }, "rank 1");
  Envelope sig;
  sig.mutable_signal()->set_job_id("job-s");
  sig.mutable_signal()->set_signal(SIGTERM);
  c->send(sig);
  JobResult r = collect(*c, 2);
  CHECK(r.exited[0].signal() == SIGTERM);
  CHECK(r.exited[1].signal() == SIGTERM);
}

TEST_CASE("ranks that ignore SIGTERM are killed after the grace period", "[agent][server]") {
  AgentServer::Options o;
  o.killGrace = 50ms;
  Fixture f(o);
  auto c = f.welcomedClient();
  c->send(launchSh("job-k", {"trap '' TERM; echo ready; while :; do sleep 0.05; done"}));
  c->nextWhere([](const Envelope& e) { return e.has_output(); }, "ready");
  Envelope sig;
  sig.mutable_signal()->set_job_id("job-k");
  sig.mutable_signal()->set_signal(SIGTERM);
  c->send(sig);
  JobResult r = collect(*c, 1);
  CHECK(r.exited[0].signal() == SIGKILL);
}

TEST_CASE("a launcher that disconnects has its ranks killed", "[agent][server]") {
  Fixture f;
  auto c = f.welcomedClient();
  c->send(launchSh("job-d", {"exec sleep 30", "exec sleep 30"}));
  int pid0 = c->nextWhere([](const Envelope& e) { return e.has_rank_started(); }, "a rank").rank_started().pid();
  CHECK(alive(pid0));
  c->close();
  runUntil(f.io, [&] { return f.server->liveRankCount() == 0 && f.server->sessionCount() == 0; },
           "the agent to stop the disconnected launcher's ranks");
  CHECK_FALSE(alive(pid0));  // reaped, so not even a zombie is left
}

TEST_CASE("a launcher whose heartbeats stop has its ranks killed", "[agent][server]") {
  AgentServer::Options o;
  o.heartbeatTimeout = 30ms;  // 3 periods of 10 ms
  Fixture f(o);
  auto c = f.welcomedClient();
  c->send(launchSh("job-h", {"exec sleep 30"}));
  int pid = c->nextWhere([](const Envelope& e) { return e.has_rank_started(); }, "started").rank_started().pid();
  c->waitClosed();  // the client never sends a heartbeat: the agent gives up on it
  runUntil(f.io, [&] { return f.server->liveRankCount() == 0; }, "the lost launcher's ranks to be stopped");
  CHECK_FALSE(alive(pid));
}

TEST_CASE("several jobs run at once, isolated by job id", "[agent][server]") {
  Fixture f;
  auto a = f.welcomedClient();
  auto b = f.welcomedClient();
  a->send(launchSh("job-a", {"exec sleep 30"}));
  a->nextWhere([](const Envelope& e) { return e.has_rank_started(); }, "job-a started");
  b->send(launchSh("job-a", {"true"}));
  auto dup = b->nextWhere([](const Envelope& e) { return e.has_error(); }, "duplicate refused");
  CHECK_THAT(dup.error().message(), Contains("job 'job-a' is already running on this agent"));
  Envelope steal;
  steal.mutable_signal()->set_job_id("job-a");
  steal.mutable_signal()->set_signal(SIGKILL);
  b->send(steal);
  auto refused = b->nextWhere([](const Envelope& e) { return e.has_error(); }, "foreign signal refused");
  CHECK_THAT(refused.error().message(), Contains("no job 'job-a' of this connection"));
  b->send(launchSh("job-b", {"echo b"}));
  JobResult rb = collect(*b, 1);
  CHECK(rb.out[0] == "b\n");
  CHECK(f.server->liveRankCount() == 1);  // job-a untouched
}

TEST_CASE("a rank that cannot be spawned is reported with errno and its siblings stopped", "[agent][server]") {
  Fixture f;
  auto c = f.welcomedClient();
  Envelope e = launchSh("job-x", {"exec sleep 30", "x"});
  e.mutable_launch()->mutable_ranks(1)->set_argv(0, "/nonexistent/python3");
  c->send(e);
  auto err = c->nextWhere([](const Envelope& m) { return m.has_error(); }, "spawn error");
  CHECK(err.error().job_id() == "job-x");
  CHECK_THAT(err.error().message(), Contains("test-node rank 1: spawn '/nonexistent/python3': No such file"));
  JobResult r = collect(*c, 1);
  CHECK(r.exited[0].signal() == SIGTERM);
}

TEST_CASE("each-rank logs go to <dir>/<tag>_rank<R>.log on the agent's node", "[agent][server]") {
  Fixture f;
  auto c = f.welcomedClient();
  Envelope e = launchSh("job-l", {"echo hello-$RANK; echo oops >&2", "echo hello-$RANK"});
  e.mutable_launch()->mutable_log()->set_each_rank_log_dir(f.tmp.path() + "/logs");
  e.mutable_launch()->mutable_log()->set_tag("20240101000000");
  c->send(e);
  JobResult r = collect(*c, 2);
  CHECK(r.out.empty());
  std::ifstream in(f.tmp.path() + "/logs/20240101000000_rank0.log");
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "hello-0\noops\n");
}

TEST_CASE("a client without a certificate is refused and the agent keeps serving", "[agent][server][security]") {
  Fixture f;
  boost::asio::ssl::context anonymous(boost::asio::ssl::context::tls_client);
  anonymous.set_verify_mode(boost::asio::ssl::verify_none);
  TestClient rogue(f.io, anonymous);
  rogue.connect(f.server->localEndpoint());  // TLS 1.3: the client may believe it succeeded
  rogue.hello();
  CHECK_FALSE(rogue.next().has_value());  // closed without a single message
  runUntil(f.io, [&] { return f.server->sessionCount() == 0; }, "the refused session to go");
  auto good = f.welcomedClient();
  CHECK(f.server->sessionCount() == 1);
}

/// A client context presenting the certificate of TLS directory `dir` whatever its role, checking
/// nothing about the agent: what a thief of that key could build.
boost::asio::ssl::context clientContextFrom(const std::string& dir) {
  const dsrun::tls::TlsFiles files = dsrun::tls::tlsFiles(dir);
  boost::asio::ssl::context ctx(boost::asio::ssl::context::tls_client);
  ctx.use_certificate_chain_file(files.cert);
  ctx.use_private_key_file(files.key, boost::asio::ssl::context::pem);
  ctx.set_verify_mode(boost::asio::ssl::verify_none);
  return ctx;
}

/// Connects with `ctx`, tries to launch a job that would create <tmp>/pwned, and checks that the
/// agent closed the connection without a message and ran nothing, and still serves the launcher.
void checkRefused(Fixture& f, boost::asio::ssl::context& ctx) {
  TestClient rogue(f.io, ctx);
  rogue.connect(f.server->localEndpoint());  // TLS 1.3: the client may believe it succeeded
  rogue.hello();
  rogue.send(launchSh("evil", {"touch " + f.tmp.path() + "/pwned"}));
  CHECK_FALSE(rogue.next().has_value());
  struct stat st {};
  CHECK(::stat((f.tmp.path() + "/pwned").c_str(), &st) != 0);
  runUntil(f.io, [&] { return f.server->sessionCount() == 0; }, "the refused session to go");
  auto good = f.welcomedClient();
}

TEST_CASE("a client with a certificate from another CA is refused", "[agent][server][security]") {
  Fixture f;
  testing::TestPki rogue(f.tmp.path() + "/rogue");
  auto rogueCtx = clientContextFrom(rogue.launcher());
  checkRefused(f, rogueCtx);
}

TEST_CASE("a node's certificate used as a client launches nothing: it may only hand over a signed tree launch",
          "[agent][server][security]") {
  Fixture f;
  // A stolen key of another node of the same cluster: the handshake passes (a tree parent dials with its node
  // certificate), but a star launch, a probe or anything else but a tree launch a launcher signed is refused.
  auto stolen = clientContextFrom(f.pki.node("other-node"));
  TestClient rogue(f.io, stolen);
  REQUIRE_FALSE(rogue.connect(f.server->localEndpoint()));
  rogue.hello();
  auto welcome = rogue.next();
  REQUIRE(welcome.has_value());
  REQUIRE(welcome->has_welcome());
  rogue.send(launchSh("evil", {"touch " + f.tmp.path() + "/pwned"}));
  auto refusal = rogue.next();
  REQUIRE(refusal.has_value());
  CHECK_THAT(refusal->error().message(), Contains("a node certificate may only send a tree launch"));
  rogue.waitClosed();
  struct stat st {};
  CHECK(::stat((f.tmp.path() + "/pwned").c_str(), &st) != 0);
  runUntil(f.io, [&] { return f.server->sessionCount() == 0; }, "the refused session to go");
  auto good = f.welcomedClient();
}

TEST_CASE("a client holding an old shared certificate of the cluster's CA is refused", "[agent][server][security]") {
  Fixture f;
  // Minted with the CA key, as any node could before per-node certificates.
  using namespace dsrun::tls;
  const TlsFiles ca = tlsFiles(f.pki.launcher());
  PKeyPtr caKey = readPrivateKey(ca.caKey, "test");
  X509Ptr caCert = readCertificate(ca.caCert, "test");
  PKeyPtr key = makeKey();
  X509Ptr cert = issueCertificate({CertKind::LegacyShared, "dsrun node", {}, {}}, key.get(), caCert.get(), caKey.get());
  const std::string dir = f.tmp.path() + "/shared";
  makeDirectories(dir);
  writeNewFile(dir + "/cert.pem", certificatePem(cert.get()), 0644);
  writeNewFile(dir + "/key.pem", privateKeyPem(key.get()), 0600);
  auto shared = clientContextFrom(dir);
  checkRefused(f, shared);
}

TEST_CASE("a revoked launcher certificate is refused as soon as crl.pem reaches the agent's directory",
          "[agent][server][security]") {
  Fixture f;
  auto before = f.welcomedClient();
  dsrun::tls::revokeCertificate(f.pki.launcher(), dsrun::tls::tlsFiles(f.pki.launcher()).cert);
  // Copied as an administrator would, replacing the node's file; the agent is not restarted.
  const std::string crl = dsrun::tls::tlsFiles(f.nodeDir).crl;
  std::filesystem::copy_file(dsrun::tls::tlsFiles(f.pki.launcher()).crl, crl + ".new");
  std::filesystem::rename(crl + ".new", crl);
  TestClient revoked(f.io, *f.clientCtx);
  revoked.connect(f.server->localEndpoint());
  revoked.hello();
  revoked.send(launchSh("evil", {"touch " + f.tmp.path() + "/pwned"}));
  CHECK_FALSE(revoked.next().has_value());
  struct stat st {};
  CHECK(::stat((f.tmp.path() + "/pwned").c_str(), &st) != 0);
  // The session established before the revocation is left alone (a restart of the agent ends it).
  runUntil(f.io, [&] { return f.server->sessionCount() == 1; }, "only the earlier session to remain");
}

TEST_CASE("a client speaking another protocol version is refused with both versions", "[agent][server]") {
  Fixture f;
  TestClient c(f.io, *f.clientCtx);
  REQUIRE_FALSE(c.connect(f.server->localEndpoint()));
  c.hello(42);
  auto e = c.next();
  REQUIRE(e.has_value());
  REQUIRE(e->has_error());
  CHECK_THAT(e->error().message(), Contains("speaks version 42, this agent speaks version 3"));
  c.waitClosed();
}

TEST_CASE("a malformed or oversized frame closes only that connection", "[agent][server]") {
  Fixture f;
  auto victim = f.welcomedClient();
  victim->send(launchSh("job-v", {"exec sleep 30"}));
  victim->nextWhere([](const Envelope& e) { return e.has_rank_started(); }, "job-v started");
  TestClient bad(f.io, *f.clientCtx);
  REQUIRE_FALSE(bad.connect(f.server->localEndpoint()));
  const std::string payload = GENERATE(std::string("\xff\xff\xff\xff", 4), std::string("\x00\x00\x00\x02\x0f\xff", 6));
  bad.sendRaw(payload);
  bad.waitClosed();
  CHECK(f.server->liveRankCount() == 1);
  CHECK(f.server->sessionCount() == 1);
}

TEST_CASE("shutdown stops every rank and lets the loop run out", "[agent][server]") {
  AgentServer::Options o;
  o.killGrace = 50ms;
  Fixture f(o);
  auto c = f.welcomedClient();
  c->send(launchSh("job-t", {"trap '' TERM; exec sleep 30"}));
  int pid = c->nextWhere([](const Envelope& e) { return e.has_rank_started(); }, "started").rank_started().pid();
  f.server->shutdown();
  auto bye = c->nextWhere([](const Envelope& e) { return e.has_error(); }, "shutdown notice");
  CHECK_THAT(bye.error().message(), Contains("agent shutting down"));
  c->waitClosed();
  c.reset();
  f.io.restart();
  f.io.run();  // returns only when nothing is left: acceptor, sessions, timers and children gone
  CHECK(f.server->liveRankCount() == 0);
  CHECK_FALSE(alive(pid));
}
