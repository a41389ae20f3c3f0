#include "launcher/backends/slurm_backend.h"

#include "common/strings.h"
#include "launcher/backends/mpi_rules.h"
#include "launcher/backends/shell_words.h"

namespace dsrun {

Command SlurmBackend::buildCommand(const WorldPlan& plan, const LaunchContext& ctx) const {
  const Options& o = ctx.options;
  const std::vector<std::string> extra = shellSplit(o.launcherArgs, "--launcher_args");
  Command c;
  c.argv = {"srun", "-n", std::to_string(plan.worldSize())};
  c.argv.insert(c.argv.end(), extra.begin(), extra.end());
  if (!o.include.empty() || !o.exclude.empty()) c.argv.push_back("--nodelist=" + hostList(plan));
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
  const std::vector<std::string> program = rankLaunchArgv(site_.node, plan, o, "slurm");
  c.argv.insert(c.argv.end(), program.begin(), program.end());
  return c;
}

}  // namespace dsrun
