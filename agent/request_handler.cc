#include "agent/request_handler.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <csignal>

#include "common/strings.h"
#include "proto/protocol.h"

namespace dsrun::agent {

uint32_t agentBeatIntervalMs(uint32_t requestedMs, uint32_t periodMs) {
  constexpr uint32_t kFastestBeatMs = 50;
  const uint32_t half = std::max(kFastestBeatMs, periodMs / 2);
  if (requestedMs == 0) return std::max<uint32_t>(1, periodMs / 2);
  return std::clamp(requestedMs, kFastestBeatMs, half);
}

uint64_t launcherSilenceBudgetMs(uint32_t launcherMs, uint64_t ownMs) {
  if (launcherMs == 0) return ownMs;
  // Longer too: an agent stricter than its launcher stops ranks the launcher still counts as alive, and
  // on a loaded launcher host (1,000 agents' spawns on 2 cores) that ended every job (docs/benchmarks.md).
  return std::min<uint64_t>(launcherMs, std::max<uint64_t>(ownMs, kLongestLauncherSilenceMs));
}
namespace {

constexpr size_t kMaxJobIdBytes = 128;
/// A mesh probe opens one connection per target at once: bounded, as a launch's ranks are.
constexpr int kMaxProbeTargets = 4096;
constexpr uint32_t kMaxProbeTimeoutMs = 60000;

Action send(wire::Envelope envelope) {
  Action a{Action::Kind::Send, std::move(envelope), {}, {}, 0, {}, 0};
  return a;
}

Action close(std::string reason) {
  Action a{Action::Kind::Close, {}, {}, {}, 0, std::move(reason), 0};
  return a;
}

/// Error to the peer, then close: the connection-level failure.
std::vector<Action> refuse(const std::string& message) { return {send(makeError("", message)), close(message)}; }

bool hasNul(const std::string& s) { return s.find('\0') != std::string::npos; }

bool allowedFromNode(const wire::Envelope& in) {
  return in.has_hello() || in.has_tree_launch() || in.has_tree_go() || in.has_tree_adopt() || in.has_signal() ||
         in.has_heartbeat() || in.has_output_credit() || in.has_error() || in.has_store_request() ||
         in.has_store_reply() || in.has_tree_released();
}

}  // namespace

const char* messageName(const wire::Envelope& envelope) {
  switch (envelope.msg_case()) {
    case wire::Envelope::kHello: return "hello";
    case wire::Envelope::kWelcome: return "welcome";
    case wire::Envelope::kLaunch: return "launch";
    case wire::Envelope::kRankStarted: return "rank_started";
    case wire::Envelope::kOutput: return "output";
    case wire::Envelope::kRankExited: return "rank_exited";
    case wire::Envelope::kSignal: return "signal";
    case wire::Envelope::kHeartbeat: return "heartbeat";
    case wire::Envelope::kError: return "error";
    case wire::Envelope::kOutputCredit: return "output_credit";
    case wire::Envelope::kRankProgress: return "rank_progress";
    case wire::Envelope::kPortCheck: return "port_check";
    case wire::Envelope::kPortCheckReply: return "port_check_reply";
    case wire::Envelope::kMeshProbe: return "mesh_probe";
    case wire::Envelope::kMeshProbeReply: return "mesh_probe_reply";
    case wire::Envelope::kTreeLaunch: return "tree_launch";
    case wire::Envelope::kTreeGo: return "tree_go";
    case wire::Envelope::kTreeProbeReport: return "tree_probe_report";
    case wire::Envelope::kEventBatch: return "event_batch";
    case wire::Envelope::kNodeLost: return "node_lost";
    case wire::Envelope::kTreeAdopt: return "tree_adopt";
    case wire::Envelope::kTreeAdopted: return "tree_adopted";
    case wire::Envelope::kTreeReleased: return "tree_released";
    case wire::Envelope::kTreeReattached: return "tree_reattached";
    case wire::Envelope::kStoreRequest: return "store_request";
    case wire::Envelope::kStoreReply: return "store_reply";
    case wire::Envelope::kRanksStarted: return "ranks_started";
    case wire::Envelope::kRanksExited: return "ranks_exited";
    case wire::Envelope::MSG_NOT_SET: return "empty envelope";
  }
  return "unknown";
}

wire::Envelope makeError(const std::string& jobId, const std::string& message) {
  wire::Envelope e;
  e.mutable_error()->set_job_id(jobId);
  e.mutable_error()->set_message(message);
  return e;
}

RequestHandler::RequestHandler(Config config) : config_(std::move(config)) {}

std::vector<Action> RequestHandler::handle(const wire::Envelope& in, const SessionView& session) const {
  if (!session.welcomed && in.msg_case() != wire::Envelope::kHello) {
    return refuse(strCat("protocol error: expected hello first, got ", messageName(in)));
  }
  if (session.peerIsNode && !allowedFromNode(in)) {
    // A node key can do nothing here but hand over a launch a launcher signed, and carry store traffic between
    // agents (docs/security.md).
    return refuse(strCat("refused: a node certificate may only send a tree launch (and its signals, heartbeats "
                         "and output credit) or store traffic, got ", messageName(in)));
  }
  switch (in.msg_case()) {
    case wire::Envelope::kHello: return handleHello(in.hello(), session);
    case wire::Envelope::kTreeLaunch: {
      if (!config_.treeLaunch) return refuse("protocol error: this agent serves no tree launches");
      Action a{Action::Kind::TreeLaunch, in, {}, {}, 0, {}, 0};
      return {std::move(a)};
    }
    case wire::Envelope::kTreeGo: {
      if (!config_.treeLaunch) return refuse("protocol error: this agent serves no tree launches");
      Action a{Action::Kind::TreeGo, {}, {}, in.tree_go().job_id(), 0, {}, 0};
      return {std::move(a)};
    }
    case wire::Envelope::kTreeAdopt: {
      if (!config_.treeLaunch) return refuse("protocol error: this agent serves no tree launches");
      Action a{Action::Kind::TreeAdopt, in, {}, {}, 0, {}, 0};
      return {std::move(a)};
    }
    case wire::Envelope::kTreeReleased: {
      // The parent ends the edge on purpose: the Session stops the job at once instead of waiting for an adopter
      // (agent/tree_edge_signal.h), and logs the close at INFO, a normal end.
      if (!config_.treeLaunch) return refuse("protocol error: this agent serves no tree launches");
      return {close(strCat("released: job ", in.tree_released().job_id(), " ends here, nobody adopts it"))};
    }
    case wire::Envelope::kStoreRequest:
    case wire::Envelope::kStoreReply: {
      // Store traffic runs between agents only (docs/rendezvous.md): a launcher has no store to ask or answer.
      if (!session.peerIsNode) return refuse(strCat("refused: ", messageName(in), " from a launcher certificate"));
      Action a{Action::Kind::Store, in, {}, {}, 0, {}, 0};
      return {std::move(a)};
    }
    case wire::Envelope::kLaunch: return handleLaunch(in.launch(), session);
    case wire::Envelope::kSignal: return handleSignal(in.signal(), session);
    case wire::Envelope::kHeartbeat: return {};  // liveness is noted by the session for every frame
    case wire::Envelope::kOutputCredit: {
      Action a{Action::Kind::Credit, {}, {}, {}, 0, {}, in.output_credit().bytes()};
      return {std::move(a)};
    }
    case wire::Envelope::kPortCheck: return handlePortCheck(in.port_check());
    case wire::Envelope::kMeshProbe: return handleMeshProbe(in.mesh_probe());
    case wire::Envelope::kError: return {close(strCat("client reported: ", in.error().message()))};
    default: return refuse(strCat("protocol error: unexpected ", messageName(in), " from a client"));
  }
}

std::vector<Action> RequestHandler::handleHello(const wire::Hello& hello, const SessionView& session) const {
  if (session.welcomed) return refuse("protocol error: duplicate hello");
  if (hello.protocol_version() != proto::kProtocolVersion) {
    return refuse(strCat("protocol version mismatch: client '", hello.client_name(), "' speaks version ",
                         hello.protocol_version(), ", this agent speaks version ", proto::kProtocolVersion));
  }
  wire::Envelope welcome;
  welcome.mutable_welcome()->set_protocol_version(proto::kProtocolVersion);
  welcome.mutable_welcome()->set_agent_host(config_.agentHost);
  welcome.mutable_welcome()->set_heartbeat_period_ms(config_.heartbeatPeriodMs);
  welcome.mutable_welcome()->set_agent_heartbeats(hello.agent_heartbeats());
  if (hello.agent_heartbeats()) {
    welcome.mutable_welcome()->set_agent_heartbeat_ms(
        agentBeatIntervalMs(hello.agent_heartbeat_ms(), config_.heartbeatPeriodMs));
  }
  welcome.mutable_welcome()->set_host_address(session.localAddress);
  welcome.mutable_welcome()->set_port_check(true);
  welcome.mutable_welcome()->set_mesh_probe(true);
  welcome.mutable_welcome()->set_tree_launch(config_.treeLaunch);
  welcome.mutable_welcome()->set_tree_probe(config_.treeLaunch);
  welcome.mutable_welcome()->set_merged_rank_events(config_.treeLaunch);  // a tree's relays merge (TreeRelay)
  welcome.mutable_welcome()->set_tree_edge_signals(config_.treeLaunch);
  Action marked{Action::Kind::MarkWelcomed, {}, {}, {}, 0, {}, 0};
  return {marked, send(std::move(welcome))};
}

std::vector<Action> RequestHandler::handleLaunch(const wire::LaunchRequest& launch, const SessionView& session) const {
  std::string why = validateLaunch(launch, config_.maxRanksPerJob);
  if (why.empty() && session.agentJobs.count(launch.job_id()) > 0) {
    why = strCat("job '", launch.job_id(), "' is already running on this agent");
  }
  if (!why.empty()) return {send(makeError(launch.job_id(), strCat("launch refused: ", why)))};
  Action a{Action::Kind::Launch, {}, launch, launch.job_id(), 0, {}, 0};
  return {std::move(a)};
}

std::vector<Action> RequestHandler::handleSignal(const wire::SignalRequest& signal, const SessionView& session) const {
  if (signal.signal() < 1 || signal.signal() >= NSIG) {
    return {send(makeError(signal.job_id(), strCat("signal refused: signal number must be in 1..", NSIG - 1,
                                                   ", got '", signal.signal(), "'")))};
  }
  if (session.ownJobs.count(signal.job_id()) == 0) {
    return {send(makeError(signal.job_id(),
                           strCat("signal refused: no job '", signal.job_id(), "' of this connection is running")))};
  }
  Action a{Action::Kind::Signal, {}, {}, signal.job_id(), signal.signal(), {}, 0};
  return {std::move(a)};
}

std::vector<Action> RequestHandler::handlePortCheck(const wire::PortCheckRequest& request) const {
  if (request.port() > 65535) {
    wire::Envelope reply;
    reply.mutable_port_check_reply()->set_port(request.port());
    reply.mutable_port_check_reply()->set_error(strCat("port check refused: port must be in 0..65535, got '",
                                                       request.port(), "'"));
    return {send(std::move(reply))};
  }
  Action a{Action::Kind::CheckPort, {}, {}, {}, 0, {}, 0, static_cast<int>(request.port())};
  return {std::move(a)};
}

std::vector<Action> RequestHandler::handleMeshProbe(const wire::MeshProbeRequest& request) const {
  std::string why;
  if (request.targets_size() > kMaxProbeTargets) {
    why = strCat("at most ", kMaxProbeTargets, " targets, got ", request.targets_size());
  } else if (request.timeout_ms() > kMaxProbeTimeoutMs) {
    why = strCat("timeout_ms must be at most ", kMaxProbeTimeoutMs, ", got '", request.timeout_ms(), "'");
  }
  for (const std::string& target : request.targets()) {
    if (!why.empty()) break;
    if (target.empty() || target.size() > 300 || hasNul(target)) why = strCat("bad target '", target, "'");
  }
  if (!why.empty()) return {send(makeError("", strCat("mesh probe refused: ", why))), close("mesh probe refused")};
  Action a{Action::Kind::ProbeMesh, {}, {}, {}, 0, {}, 0, 0, request};
  return {std::move(a)};
}

std::string RequestHandler::validateLaunch(const wire::LaunchRequest& request, int maxRanks) {
  const std::string& id = request.job_id();
  if (id.empty()) return "job_id is empty";
  if (id.size() > kMaxJobIdBytes) return strCat("job_id is longer than ", kMaxJobIdBytes, " bytes");
  for (unsigned char c : id) {
    if (c < 0x21 || c > 0x7e) return strCat("job_id must be printable ASCII without spaces, got '", id, "'");
  }
  if (request.ranks_size() == 0) return "no ranks to launch";
  if (request.ranks_size() > maxRanks) {
    return strCat("too many ranks: at most ", maxRanks, " per job, got ", request.ranks_size());
  }
  if (!std::isfinite(request.kill_grace_s()) || request.kill_grace_s() > 3600) {
    return strCat("kill_grace_s must be at most 3600, got '", request.kill_grace_s(), "'");
  }
  const std::string& tag = request.log().tag();
  if (tag.find('/') != std::string::npos || hasNul(tag) || tag == "." || tag == "..") {
    return strCat("log tag must be a file-name prefix without '/', got '", tag, "'");
  }
  if (hasNul(request.log().each_rank_log_dir())) return "each_rank_log_dir contains a NUL byte";
  std::set<int> seen;
  for (const auto& rank : request.ranks()) {
    if (rank.rank() < 0) return strCat("rank must be non-negative, got '", rank.rank(), "'");
    if (!seen.insert(rank.rank()).second) return strCat("rank ", rank.rank(), " appears twice");
    if (rank.argv_size() == 0 || rank.argv(0).empty()) return strCat("rank ", rank.rank(), ": argv is empty");
    for (const auto& word : rank.argv()) {
      if (hasNul(word)) return strCat("rank ", rank.rank(), ": argv contains a NUL byte");
    }
    for (const auto& var : rank.env()) {
      const std::string& name = var.name();
      if (name.empty() || name.find('=') != std::string::npos || hasNul(name)) {
        return strCat("rank ", rank.rank(), ": invalid environment variable name '", name, "'");
      }
      if (hasNul(var.value())) return strCat("rank ", rank.rank(), ": environment variable ", name, " contains a NUL byte");
    }
    if (hasNul(rank.cwd())) return strCat("rank ", rank.rank(), ": cwd contains a NUL byte");
    for (int core : rank.cores()) {
      if (core < 0 || core >= CPU_SETSIZE) return strCat("rank ", rank.rank(), ": invalid core '", core, "'");
    }
  }
  return "";
}

}  // namespace dsrun::agent
