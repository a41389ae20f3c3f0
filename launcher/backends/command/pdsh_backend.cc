#include "launcher/backends/command/pdsh_backend.h"

#include "supervision/launch_lines.h"
#include "common/strings.h"
#include "launcher/backends/command/mpi_rules.h"
#include "launcher/backends/shell_words.h"

namespace dsrun::launcher {

namespace {

// Stands in for pdsh's %n while quoting, so the one intended %n survives the '%' doubling.
constexpr const char* kNodeRankMark = "@DSRUN_NODE_RANK@";

}  // namespace

CommandRunner PdshBackend::runCapturedDefault() { return runCaptured; }

EnvMap PdshBackend::pdshEnvironment(const LaunchContext& ctx) const {
  EnvMap env = ctx.launcherEnv;
  env["PDSH_RCMD_TYPE"] = "ssh";
  if (ctx.options.sshPort) {
    const std::string port = strCat("-p ", *ctx.options.sshPort);
    auto it = env.find("PDSH_SSH_ARGS_APPEND");
    env["PDSH_SSH_ARGS_APPEND"] = it == env.end() || it->second.empty() ? port : it->second + " " + port;
  }
  return env;
}

std::vector<std::string> PdshBackend::pdshPrefix(const WorldPlan& plan, const LaunchContext& ctx) const {
  std::vector<std::string> argv = {"pdsh", "-S", "-f", std::to_string(kPdshMaxFanOut), "-w", hostList(plan)};
  for (std::string& word : shellSplit(ctx.options.launcherArgs, "--launcher_args")) argv.push_back(std::move(word));
  return argv;
}

Command PdshBackend::buildCommand(const WorldPlan& plan, const LaunchContext& ctx) const {
  Command c;
  c.argv = pdshPrefix(plan, ctx);
  const std::vector<std::string> launch =
      nodeLaunchArgv(site_.node, plan, ctx.options, ctx.launcherPid, kNodeRankMark, false);
  for (const std::string& word : remoteShellWords(plan.exports, site_.node.cwd, launch, ctx.options.venvScript)) {
    c.argv.push_back(word == strCat("--node_rank=", kNodeRankMark) ? "--node_rank=%n" : escapePdshPercent(word));
  }
  c.env = pdshEnvironment(ctx);
  return c;
}

std::optional<Command> PdshBackend::killCommand(const WorldPlan& plan, const LaunchContext& ctx) const {
  Command c;
  c.argv = pdshPrefix(plan, ctx);
  for (const std::string& word :
       {site_.node.nodeLaunch, std::string("--kill"), "--job_id=" + plan.jobId,
        strCat("--kill_grace_s=", ctx.options.launch.stop.killGrace.count())}) {
    c.argv.push_back(escapePdshPercent(shellQuote(word)));
  }
  c.env = pdshEnvironment(ctx);
  return c;
}

std::optional<Command> PdshBackend::signalCommand(const WorldPlan& plan, const LaunchContext& ctx,
                                                 const std::vector<int>& signals) const {
  std::vector<std::string> names;
  for (int signal : signals) names.push_back(controlSignalName(signal));
  Command c;
  c.argv = pdshPrefix(plan, ctx);
  for (const std::string& word : {site_.node.nodeLaunch, "--signal=" + join(names, ","), "--job_id=" + plan.jobId}) {
    c.argv.push_back(escapePdshPercent(shellQuote(word)));
  }
  c.env = pdshEnvironment(ctx);
  return c;
}

Command PdshBackend::sshCheckFor(const std::string& host, const LaunchContext& ctx) const {
  Options options = ctx.options;
  options.sshPort.reset();  // pdshEnvironment already put -p into PDSH_SSH_ARGS_APPEND
  const EnvMap env = pdshEnvironment(ctx);
  return sshCheckCommand(host, sshOptionsFor(options, env), env);
}

Command PdshBackend::sshCheck(const WorldPlan& plan, const LaunchContext& ctx) const {
  return sshCheckFor(plan.hosts.front().host, ctx);
}

LaunchPreparation PdshBackend::prepareLaunch(const WorldPlan& draft, const LaunchContext& ctx) {
  const std::string& host = draft.masterAddrHost;
  if (!host.empty() && !ctx.options.noSshCheck) {
    // Only a hostfile's first host is checked here (planWorld infers MASTER_ADDR from hostfile hosts only).
    checkPasswordlessSsh(host, sshCheckFor(host, ctx), ctx.options.hostfile, "PDSH_SSH_ARGS_APPEND", runCheck_);
  }
  return {};
}

void PdshBackend::beforeLaunch(const WorldPlan& plan, const LaunchContext& ctx) {
  if (ctx.options.noSshCheck || ctx.firstHostChecked) return;
  checkPasswordlessSsh(plan.hosts.front().host, sshCheck(plan, ctx), plan.hostsFromHostfile ? ctx.options.hostfile : "",
                       "PDSH_SSH_ARGS_APPEND", runCheck_);
}

}  // namespace dsrun::launcher
