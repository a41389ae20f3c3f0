#include "launcher/backends/agent/agent_backend.h"

#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "common/error.h"
#include "common/rank_log.h"
#include "common/strings.h"
#include "launcher/elastic_job.h"
#include "launcher/backends/agent/agent_job.h"
#include "launcher/backends/agent/agent_elastic_rounds.h"
#include "tls/ssl_context.h"

namespace dsrun {
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

}  // namespace

std::vector<NodeCommand> AgentBackend::nodeCommands(const WorldPlan& plan, const LaunchContext& ctx) const {
  std::vector<NodeCommand> out;
  for (size_t i = 0; i < plan.hosts.size(); ++i) {
    std::vector<std::string> ranks;
    for (const PlannedRank* r : plan.ranksOnNode(static_cast<int>(i))) ranks.push_back(std::to_string(r->rank));
    if (ranks.empty()) continue;
    out.push_back(NodeCommand{plan.hosts[i].host,
                              {"dsrun-agent", strCat(plan.hosts[i].host, ":", ctx.options.agentPort), "--job_id",
                               plan.jobId, "--ranks", join(ranks, ",")}});
  }
  return out;
}

int AgentBackend::run(const WorldPlan& plan, const LaunchContext& ctx) {
  const Options& o = ctx.options;
  if (o.tlsDir.empty()) {
    throw ConfigError("--launcher agent needs --tls_dir DIR (the launcher's TLS directory)\n"
                      "  hint: create one with 'dsrun --make_tls DIR', give each host its own with 'dsrun "
                      "--make_node_cert DIR --host NAME --out NODEDIR' and start 'dsrun-agent --tls_dir NODEDIR' "
                      "there");
  }
  auto ssl = tls::makeSslContext(o.tlsDir, tls::Role::Client);
  AgentJob::Settings s;
  s.port = o.agentPort;
  s.program = o.userScript;
  s.launch = o.launch;  // no job id here: AgentJob sends its plan's (each elastic round has its own)
  s.agentBeatMs = static_cast<uint32_t>(o.agentHeartbeatMs);
  s.silentBeats = o.agentHeartbeatMisses;
  s.hangTimeoutS = o.launch.hangTimeoutS;
  s.meshProbe = o.meshProbe;
  s.cwd = currentDirectory();
  if (!s.launch.eachRankLogDir.empty()) {
    // Interpreted on every node, like the remote `cd <cwd>` of DeepSpeed's pdsh runner.
    const std::string dir = s.launch.eachRankLogDir;
    s.launch.eachRankLogDir = dir[0] == '/' ? dir : s.cwd + "/" + dir;
    s.logTag = rankLogPrefix(std::time(nullptr));
    s.hangDir = s.launch.eachRankLogDir;
  }
  s.clientName = strCat("dsrun on ", hostName(), " pid ", ctx.launcherPid, " job ", plan.jobId);
  if (plan.elastic) {
    AgentElasticRounds rounds(ssl, s);
    return ElasticJob(plan, o, rounds).run();
  }
  AgentJob job(plan, ssl, s, STDOUT_FILENO, STDERR_FILENO);
  return job.run();
}

}  // namespace dsrun
