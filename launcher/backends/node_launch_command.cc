#include "launcher/backends/node_launch_command.h"

#include "common/error.h"
#include "common/strings.h"
#include "launcher/node_launch/world_info.h"

namespace dsrun::launcher {

namespace {

void append(std::vector<std::string>& argv, const std::vector<std::string>& words) {
  argv.insert(argv.end(), words.begin(), words.end());
}

void addScript(std::vector<std::string>& argv, const Options& options) {
  argv.push_back(options.userScript);
  argv.insert(argv.end(), options.userArgs.begin(), options.userArgs.end());
}

bool isShellName(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> nodeLaunchArgv(const NodeSite& site, const WorldPlan& plan, const Options& options,
                                        int launcherPid, const std::string& nodeRank, bool watchStdin) {
  std::vector<std::string> argv = {site.nodeLaunch, "--world_info=" + encodeWorldInfo(plan.hosts),
                                    "--node_rank=" + nodeRank, "--master_addr=" + plan.masterAddr,
                                    strCat("--master_port=", plan.masterPort)};
  append(argv, launchSettings(options, plan.jobId, launcherPid).toArgv());
  if (watchStdin) argv.push_back("--watch_stdin");
  addScript(argv, options);
  return argv;
}

std::vector<std::string> rankLaunchArgv(const NodeSite& site, const WorldPlan& plan, const Options& options,
                                        const std::string& flavor) {
  std::vector<std::string> argv = {site.nodeLaunch, "--rank_env=" + flavor, "--master_addr=" + plan.masterAddr,
                                    strCat("--master_port=", plan.masterPort)};
  append(argv, launchSettings(options, plan.jobId, /*launcherPid=*/0).toRankArgv());
  addScript(argv, options);
  return argv;
}

std::vector<std::string> remoteShellWords(const EnvMap& exports, const std::string& cwd,
                                          const std::vector<std::string>& argv, const std::string& venvScript) {
  std::vector<std::string> words;
  // First, as DeepSpeed's pdsh runner does ("source SCRIPT;"); '.' because the remote shell may be a POSIX sh.
  if (!venvScript.empty()) words.push_back(strCat(". ", shellQuote(venvScript), ";"));
  for (const auto& [name, value] : exports) {
    if (!isShellName(name)) {
      throw ConfigError(strCat("cannot export '", name, "' to remote nodes: not a shell variable name",
                               "\n  hint: rename it in the environment or .deepspeed_env"));
    }
    words.push_back(strCat("export ", name, "=", shellQuote(value), ";"));
  }
  words.push_back(strCat("cd ", shellQuote(cwd), ";"));
  for (const std::string& word : argv) words.push_back(shellQuote(word));
  return words;
}

}  // namespace dsrun::launcher
