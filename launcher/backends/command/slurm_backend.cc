#include "launcher/backends/command/slurm_backend.h"

#include <set>
#include <sstream>

#include "supervision/launch_lines.h"
#include "common/error.h"
#include "common/exit_status.h"
#include "common/strings.h"
#include "launcher/backends/command/mpi_rules.h"
#include "launcher/backends/shell_words.h"

namespace dsrun::launcher {

Command SlurmBackend::buildCommand(const WorldPlan& plan, const LaunchContext& ctx) const {
  const Options& o = ctx.options;
  const std::vector<std::string> extra = shellSplit(o.launcherArgs, "--launcher_args");
  Command c;
  c.argv = {"srun", "-n", std::to_string(plan.worldSize())};
  c.argv.insert(c.argv.end(), extra.begin(), extra.end());
  bool userSetNodes = false;
  for (const std::string& word : extra) {
    userSetNodes = userSetNodes || startsWith(word, "--nodelist") || startsWith(word, "-w");
  }
  // Always the hostfile's active hosts: without it srun places ranks wherever Slurm likes (DeepSpeed passes
  // nothing unless --include is given, and its ranks can land on hosts the hostfile does not name).
  if (plan.hostsFromHostfile && !userSetNodes) c.argv.push_back("--nodelist=" + hostList(plan));
  // DeepSpeed's Slurm pass-through: job metadata and the account to charge.
  if (!o.comment.empty()) c.argv.push_back("--comment=" + o.comment);
  if (!o.account.empty()) c.argv.push_back("--account=" + o.account);
  if (o.numNodes > 0) c.argv.push_back(strCat("--nodes=", o.numNodes));
  if (o.numGpus > 0) c.argv.push_back(strCat("--gpus=", o.numGpus));
  bool uniform = true;
  for (const HostSlots& host : plan.hosts) uniform = uniform && host.slots.size() == plan.hosts.front().slots.size();
  bool userSetLayout = false, userSetKill = false;
  for (const std::string& word : extra) {
    userSetLayout = userSetLayout || startsWith(word, "--ntasks-per-node") || word == "-N" || startsWith(word, "--nodes");
    userSetKill = userSetKill || startsWith(word, "--kill-on-bad-exit") || word == "-K" || startsWith(word, "-K");
  }
  if (uniform && !userSetLayout && o.numNodes <= 0) {
    c.argv.push_back(strCat("--nodes=", plan.hosts.size()));
    c.argv.push_back(strCat("--ntasks-per-node=", plan.hosts.front().slots.size()));
  }
  if (!userSetKill) c.argv.push_back("--kill-on-bad-exit=1");
  std::string exports = "--export=ALL";
  c.env = ctx.launcherEnv;
  for (const auto& [name, value] : plan.exports) {
    c.env[name] = value;
    if (value.find(',') == std::string::npos) exports += strCat(",", name, "=", value);
  }
  c.argv.push_back(exports);
  if (!userNamesJob(ctx)) c.argv.push_back("--job-name=" + plan.jobId);  // what scancel finds it by
  const std::vector<std::string> program = rankLaunchArgv(site_.node, plan, o, "slurm");
  c.argv.insert(c.argv.end(), program.begin(), program.end());
  return c;
}

CommandRunner SlurmBackend::runCapturedDefault() { return runCaptured; }

bool SlurmBackend::userNamesJob(const LaunchContext& ctx) {
  for (const std::string& word : shellSplit(ctx.options.launcherArgs, "--launcher_args")) {
    if (startsWith(word, "--job-name") || startsWith(word, "-J")) return true;
  }
  return false;
}

Command SlurmBackend::scancel(const WorldPlan& plan, const LaunchContext& ctx, const std::vector<std::string>& signals) {
  std::vector<std::string> calls;
  // The job id is made of [a-z0-9-] (job_id.h): safe in a shell word as it is.
  for (const std::string& signal : signals) calls.push_back(strCat("scancel --name=", plan.jobId, " --signal=", signal));
  Command c;
  c.argv = {"sh", "-c", join(calls, " && sleep 0.1 && ")};
  c.env = ctx.launcherEnv;
  return c;
}

std::optional<Command> SlurmBackend::killCommand(const WorldPlan& plan, const LaunchContext& ctx) const {
  if (userNamesJob(ctx)) return std::nullopt;
  return scancel(plan, ctx, {"KILL"});
}

std::optional<Command> SlurmBackend::signalCommand(const WorldPlan& plan, const LaunchContext& ctx,
                                                   const std::vector<int>& signals) const {
  if (userNamesJob(ctx)) return std::nullopt;
  std::vector<std::string> names;
  for (int signal : signals) names.push_back(controlSignalName(signal));
  return scancel(plan, ctx, names);
}

std::set<std::string> SlurmBackend::slurmNodeNames(const LaunchContext& ctx) const {
  Command sinfo;
  sinfo.argv = {"sinfo", "-h", "-N", "-o", "%N"};
  sinfo.env = ctx.launcherEnv;
  const CapturedRun run = runInfo_(sinfo);
  if (exitCodeOf(run.waitStatus) != 0) {
    throw Error(strCat("cannot list the Slurm nodes: 'sinfo -h -N -o %N' ", describeWaitStatus(run.waitStatus), ": ",
                       trim(run.output), "\n  hint: check that slurmctld is reachable (SLURM_CONF)"));
  }
  std::set<std::string> names;
  std::istringstream words(run.output);
  for (std::string name; words >> name;) names.insert(name);
  return names;
}

void SlurmBackend::checkHostsKnown(const WorldPlan& plan, const LaunchContext& ctx) const {
  if (!plan.hostsFromHostfile) return;
  const std::set<std::string> known = slurmNodeNames(ctx);
  for (const HostSlots& host : plan.hosts) {
    if (known.count(host.host) > 0) continue;
    throw ConfigError(strCat("host '", host.host, "' in ", ctx.options.hostfile, " is not a Slurm node (nodes: ",
                             join(std::vector<std::string>(known.begin(), known.end()), ", "), ")",
                             "\n  hint: name hosts in the hostfile by their Slurm NodeName (sinfo -N)"));
  }
}

}  // namespace dsrun::launcher
