#include "launcher/backends/agent/agent_backend.h"

#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "common/error.h"
#include "common/logging.h"
#include "supervision/rank_log.h"
#include "common/strings.h"
#include "launcher/elastic_training/elastic_job.h"
#include "launcher/backends/agent/agent_job.h"
#include "launcher/backends/agent/agent_launch_request.h"
#include "launcher/backends/agent/silence_budget.h"
#include "launcher/backends/agent/agent_elastic_rounds.h"
#include "launcher/backends/agent/agent_port_preflight.h"
#include "launcher/backends/agent/agent_tree_choice.h"
#include "launcher/backends/agent/agent_tree_dry_run.h"
#include "tls/ssl_context.h"

namespace dsrun::launcher {
namespace {

std::string currentDirectory() {
  std::string buf(4096, '\0');
  if (::getcwd(buf.data(), buf.size()) == nullptr) throw IoError("", "getcwd", errno, "finding the launch directory");
  return buf.c_str();
}

std::string hostName() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

// The launcher's TLS context (--tls_dir); a ConfigError says how to make one.
boost::asio::ssl::context makeClientContext(const Options& o) {
  if (o.tlsDir.empty()) {
    throw ConfigError("--launcher agent needs --tls_dir DIR (the launcher's TLS directory)\n"
                      "  hint: create one with 'dsrun --make_tls DIR', give each host its own with 'dsrun "
                      "--make_node_cert DIR --host NAME --out NODEDIR' and start 'dsrun-agent --tls_dir NODEDIR' "
                      "there");
  }
  return tls::makeSslContext(o.tlsDir, tls::Role::Client);
}

// An elastic round's world and store are re-formed by dsrun's rounds (launcher/elastic/), not through the agents.
void refuseElasticAgentRendezvous(const Options& o) {
  if (!o.agentRendezvous || !o.elasticTraining) return;
  throw ConfigError("--rendezvous agent: an elastic job (--elastic_training) rendezvouses through rank 0's store\n"
                    "  hint: drop --rendezvous agent (or pass --rendezvous store) for an elastic job");
}

// The agents listen on --agent_port; a job whose MASTER_PORT is the same port would find it taken on the master's
// host by the agent itself, whatever else is free (the port check would name dsrun-agent, not the cause).
void refuseMasterPortOnAgentPort(int masterPort, int agentPort) {
  if (masterPort == 0 || masterPort != agentPort) return;
  throw ConfigError(strCat("MASTER_PORT ", masterPort, " is the agents' port (--agent_port ", agentPort,
                           "): rank 0's store could not listen where its agent does\n  hint: pass another "
                           "--master_port (the default is 29500) or start the agents on another port"));
}

// Sent in Hello and shown in the agents' logs.
std::string clientName(const LaunchContext& ctx, const std::string& jobId) {
  return strCat("dsrun on ", hostName(), " pid ", ctx.launcherPid, " job ", jobId);
}

}  // namespace

LaunchPreparation AgentBackend::prepareLaunch(const WorldPlan& draft, const LaunchContext& ctx) {
  refuseElasticAgentRendezvous(ctx.options);
  refuseMasterPortOnAgentPort(draft.masterPort, ctx.options.agentPort);
  if (draft.elastic) return {};
  auto& ssl = preparedSsl_.emplace(makeClientContext(ctx.options));
  const std::string& first = draft.hosts.front().host;
  const AgentRendezvous r = learnAgentRendezvous(ssl, first, ctx.options.agentPort, clientName(ctx, draft.jobId),
                                                 draft.masterPort, AgentJob::Settings().connectTimeout);
  LaunchPreparation out;
  out.masterPort = r.masterPort;
  if (!draft.masterAddrHost.empty()) {
    out.masterAddr = r.address;
    DSRUN_LOG(INFO) << "MASTER_ADDR=" << r.address << " (the address of the agent on " << first << ")";
  }
  return out;
}

RankDetail AgentBackend::rankDetail(const WorldPlan& draft, const LaunchContext& ctx) const {
  // An elastic job plans each round's world itself; a star sends every rank's command from dsrun's loop.
  if (draft.elastic || chooseAgentTree(ctx.options.treeWidth, draft.hosts.size()).width == 0) return RankDetail::Commands;
  return RankDetail::Slots;
}

std::vector<NodeCommand> AgentBackend::nodeCommands(const WorldPlan& plan, const LaunchContext& ctx) const {
  std::vector<NodeCommand> out;
  const std::vector<std::vector<const PlannedRank*>> ranksOfNode = ranksByNode(plan);
  for (size_t i = 0; i < plan.hosts.size(); ++i) {
    std::vector<std::string> ranks;
    for (const PlannedRank* r : ranksOfNode[i]) ranks.push_back(std::to_string(r->rank));
    if (ranks.empty()) continue;
    out.push_back(NodeCommand{plan.hosts[i].host,
                              {"dsrun-agent", strCat(plan.hosts[i].host, ":", ctx.options.agentPort), "--job_id",
                               plan.jobId, "--ranks", join(ranks, ",")}});
  }
  return out;
}

std::vector<DryRunSection> AgentBackend::dryRunSections(const WorldPlan& plan, const LaunchContext& ctx) const {
  const AgentTreeChoice choice = chooseAgentTree(ctx.options.treeWidth, plan.hosts.size());
  std::vector<DryRunSection> out{{"agent_launch", agentLaunchDryRunJson(choice)}};
  if (choice.width > 0) out.push_back({"agent_tree", agentTreeDryRunJson(plan, choice.width, ctx.options.meshProbe)});
  return out;
}

int AgentBackend::run(const WorldPlan& plan, const LaunchContext& ctx) {
  const Options& o = ctx.options;
  std::optional<boost::asio::ssl::context> prepared = std::move(preparedSsl_);
  preparedSsl_.reset();
  auto& ssl = prepared ? *prepared : prepared.emplace(makeClientContext(o));
  AgentJob::Settings s;
  s.port = o.agentPort;
  s.program = o.userScript;
  s.launch = o.launch;  // no job id here: AgentJob sends its plan's (each elastic round has its own)
  s.agentBeatMs = static_cast<uint32_t>(o.agentHeartbeatMs);
  s.silentBeats = silentBeatsFor(o.agentHeartbeatMisses, s.agentBeatMs, plan.hosts.size(), plan.ranks.size());
  if (s.silentBeats != o.agentHeartbeatMisses) {
    DSRUN_LOG(INFO) << "heartbeat budget " << s.agentBeatMs * static_cast<uint32_t>(s.silentBeats) << " ms ("
                    << s.silentBeats << " missed " << s.agentBeatMs << " ms beats) for " << plan.hosts.size()
                    << " hosts: dsrun's loop needs longer than --agent_heartbeat_misses " << o.agentHeartbeatMisses
                    << " allows to work through their events once";
  }
  s.hangTimeoutS = o.launch.hangTimeoutS;
  s.meshProbe = o.meshProbe;
  s.treeWidth = o.treeWidth;  // an elastic job's rounds choose for each world (AgentElasticRounds::runRound)
  s.agentRendezvous = o.agentRendezvous;
  s.tlsDir = o.tlsDir;
  s.cwd = currentDirectory();
  if (!s.launch.eachRankLogDir.empty()) {
    // Interpreted on every node, like the remote `cd <cwd>` of DeepSpeed's pdsh runner.
    const std::string dir = s.launch.eachRankLogDir;
    s.launch.eachRankLogDir = dir[0] == '/' ? dir : s.cwd + "/" + dir;
    s.logTag = rankLogPrefix(std::time(nullptr));
    s.hangDir = s.launch.eachRankLogDir;
  }
  s.clientName = clientName(ctx, plan.jobId);
  if (plan.elastic) {
    AgentElasticRounds rounds(ssl, s);
    return ElasticJob(plan, o, rounds).run();
  }
  const AgentTreeChoice choice = chooseAgentTree(o.treeWidth, plan.hosts.size());
  DSRUN_LOG(INFO) << "agent launch: " << choice.why;
  s.treeWidth = choice.width;
  AgentJob job(plan, ssl, s, STDOUT_FILENO, STDERR_FILENO);
  return job.run();
}

}  // namespace dsrun::launcher
