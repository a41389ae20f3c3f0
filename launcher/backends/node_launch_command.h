#pragma once
// The dsrun-launch command lines the multi-node backends run (DeepSpeed's `python -u -m
// deepspeed.launcher.launch ...` and launcher_helper.py, replaced by dsrun's per-node program), and the
// shell line around them for backends that go through a remote shell (pdsh, ssh).

#include <string>
#include <vector>

#include "launcher/environment.h"
#include "launcher/options.h"
#include "launcher/world_plan.h"

namespace dsrun::launcher {

/// Where things are on the nodes; shared filesystems (or identical installs) are assumed, as DeepSpeed
/// assumes for sys.executable and the launch directory.
struct NodeSite {
  std::string nodeLaunch;  ///< absolute path of dsrun-launch
  std::string cwd;         ///< the launch directory (DeepSpeed's `cd {os.path.abspath('.')}`)
};

/// Node mode argv: NODE_LAUNCH --world_info=B64 --node_rank=NODE_RANK --master_addr=A --master_port=P
/// SETTINGS [--watch_stdin] SCRIPT ARGS..., where SETTINGS is launchSettings(options, plan.jobId,
/// launcherPid).toArgv(): [--no_python] [--module] [--no_local_rank] [--save_pid PID]
/// [--enable_each_rank_log=DIR] [--bind_cores_to_rank] [--bind_core_list=L] --job_id=ID [--python=PY]
/// [--tag_output] --kill_grace_s=S [--exit_timeout_s=S].
std::vector<std::string> nodeLaunchArgv(const NodeSite& site, const WorldPlan& plan, const Options& options,
                                        int launcherPid, const std::string& nodeRank, bool watchStdin);

/// Rank mode argv for MPI/Slurm tasks: NODE_LAUNCH --rank_env=FLAVOR --master_addr=A --master_port=P
/// SETTINGS SCRIPT ARGS..., SETTINGS being RankLaunchSettings::toRankArgv(): --job_id=ID [--python=PY]
/// [--no_python] [--module] [--no_local_rank] --kill_grace_s=S.
std::vector<std::string> rankLaunchArgv(const NodeSite& site, const WorldPlan& plan, const Options& options,
                                        const std::string& flavor);

/// The remote shell words: ". 'VENV_SCRIPT';" (--venv_script, when not empty), "export K='V';" per variable,
/// "cd 'CWD';", then every argv word quoted, so the line a remote POSIX shell runs delivers argv and values
/// byte for byte. Throws ConfigError for a variable name a shell cannot export.
std::vector<std::string> remoteShellWords(const EnvMap& exports, const std::string& cwd,
                                          const std::vector<std::string>& argv, const std::string& venvScript = "");

}  // namespace dsrun::launcher
