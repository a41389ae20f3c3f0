#include "launcher/backends/ssh/ssh_backend.h"

#include <poll.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <sstream>

#include "common/error.h"
#include "common/strings.h"
#include "launcher/backends/ssh/ssh_elastic_rounds.h"
#include "launcher/backends/ssh/ssh_job.h"
#include "launcher/backends/ssh/ssh_round.h"
#include "launcher/elastic_training/elastic_job.h"

namespace dsrun::launcher {

namespace {

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

SshTarget SshBackend::targetFor(const std::string& host, const Options& options) {
  SshTarget t;
  t.host = host;
  t.configFile = options.sshConfig;
  t.port = options.sshPort;
  return t;
}

std::vector<NodeCommand> SshBackend::nodeCommands(const WorldPlan& plan, const LaunchContext& ctx) const {
  std::vector<NodeCommand> out;
  for (size_t i = 0; i < plan.hosts.size(); ++i) {
    std::vector<std::string> launch =
        nodeLaunchArgv(site_.node, plan, ctx.options, ctx.launcherPid, std::to_string(i), true);
    // Heartbeats the node watches for, on every job: a node whose link to dsrun goes silent
    // stops its ranks after the budget dsrun gives it, instead of training on, cut off.
    launch = withStdinTimeout(std::move(launch), ctx.options.agentHeartbeatMs * ctx.options.agentHeartbeatMisses);
    if (!plan.elastic) {
      out.push_back({plan.hosts[i].host, remoteShellWords(plan.exports, site_.node.cwd, launch, ctx.options.venvScript)});
      continue;
    }
    // An elastic round: the restart counter for this node.
    EnvMap exports = plan.exports;
    for (auto& [name, value] : elasticNodeExports(plan, static_cast<int>(i))) exports[name] = value;
    out.push_back({plan.hosts[i].host, remoteShellWords(exports, site_.node.cwd, launch, ctx.options.venvScript)});
  }
  return out;
}

LaunchPreparation SshBackend::prepareLaunch(const WorldPlan& draft, const LaunchContext& ctx) {
  if (draft.masterAddrHost.empty()) return {};
  SshSession session(targetFor(draft.masterAddrHost, ctx.options));
  session.exec("hostname -I");
  const std::string hint = "\n  hint: pass --master_addr ADDR (the address of the first host)";
  std::string output;
  char buffer[1024];
  const double deadline = nowSeconds() + 30;
  while (true) {
    const int n = session.readSome(buffer, sizeof buffer, false);
    if (n > 0) {
      output.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0) break;
    if (nowSeconds() > deadline) {
      throw TimeoutError(strCat("cannot infer the master address: 'hostname -I' on ", session.peer(),
                                " did not finish within 30 s", hint));
    }
    pollfd p{session.fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
  }
  std::istringstream words(output);
  std::string first;
  words >> first;
  if (first.empty()) {
    throw Error(strCat("cannot infer the master address: 'hostname -I' on ", session.peer(),
                       " printed no address (exit status ", session.exitStatus(), ")", hint));
  }
  return {first, std::nullopt};
}

int SshBackend::run(const WorldPlan& plan, const LaunchContext& ctx) {
  const Options& options = ctx.options;
  SshJob::Settings settings;
  settings.stop = options.launch.stop;
  settings.program = options.userScript;
  settings.heartbeatMs = options.agentHeartbeatMs;
  settings.heartbeatMisses = options.agentHeartbeatMisses;
  for (const PlannedRank& r : plan.ranks) settings.rankHosts[r.rank] = r.host;
  const auto target = [&options](const std::string& host) { return targetFor(host, options); };
  if (plan.elastic) {
    SshElasticRounds rounds([this, &ctx](const WorldPlan& round) { return nodeCommands(round, ctx); }, target,
                            settings);
    return ElasticJob(plan, options, rounds).run();
  }
  SshJob job(nodeCommands(plan, ctx),
             [&target](const std::string& host) { return std::make_unique<SshSession>(target(host)); }, settings);
  return job.run();
}

}  // namespace dsrun::launcher
