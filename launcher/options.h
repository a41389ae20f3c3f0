#pragma once
// The `dsrun` command line: every flag of DeepSpeed's runner (deepspeed/launcher/runner.py) plus dsrun's own.
// Parsing stops at the user script: it and everything after it reach the ranks untouched (argparse REMAINDER).

#include <optional>
#include <string>
#include <vector>

#include "launcher/launch_settings.h"

namespace dsrun::launcher {

/// Multi-node launchers `--launcher` accepts (lower case; the flag itself is case-insensitive).
extern const std::vector<std::string> kLauncherChoices;

/// Default `--hostfile` (DeepSpeed's DLTS_HOSTFILE); its absence means local mode.
inline constexpr const char* kDefaultHostfile = "/job/hostfile";

/// Default `--agent_port` of the dsrun-agent backend.
inline constexpr int kDefaultAgentPort = 29600;
/// --tree_width auto (the default): the agent backend picks the star or a tree by the host count
/// (launcher/backends/agent/agent_tree_choice.h).
inline constexpr int kTreeWidthAuto = -1;

/// Parsed command line. Defaults are DeepSpeed's; -1 means "not given" where DeepSpeed uses -1.
struct Options {
  // --- DeepSpeed runner flags ---
  std::string hostfile = kDefaultHostfile;  ///< -H/--hostfile
  bool hostfileGiven = false;               ///< true if -H/--hostfile was on the command line
  std::string include;                      ///< -i/--include NODE_SPEC[@NODE_SPEC...]; empty = none
  std::string exclude;                      ///< -e/--exclude, same syntax
  int numNodes = -1;                        ///< --num_nodes (first N hosts)
  int numGpus = -1;                         ///< --num_gpus/--num_accelerators (first N slots per host)
  int minElasticNodes = -1;                 ///< --min_elastic_nodes
  int maxElasticNodes = -1;                 ///< --max_elastic_nodes
  int masterPort = 29500;                   ///< --master_port
  std::string masterAddr;                   ///< --master_addr; empty = infer
  int nodeRank = -1;                        ///< --node_rank (with --no_ssh)
  std::string launcher = "pdsh";            ///< --launcher, lower-cased, one of kLauncherChoices
  std::string launcherArgs;                 ///< --launcher_args, one string split by the backend
  bool noSsh = false;                       ///< --no_ssh: launch only this node's ranks (needs --node_rank)
  bool noSshCheck = false;                  ///< --no_ssh_check
  bool forceMulti = false;                  ///< --force_multi: multi-node backend even for one host
  bool savePid = false;                     ///< --save_pid: write /tmp/<pid>.deepspeed (launchSettings() puts
                                            ///< dsrun's pid into launch.savePid)
  std::string autotuning;                   ///< --autotuning tune|run (accepted, not supported)
  bool elasticTraining = false;             ///< --elastic_training (agent, ssh; docs/elastic_training.md)
  std::optional<int> sshPort;               ///< --ssh_port
  std::string venvScript;                   ///< --venv_script: sourced on each node before its launch (pdsh, ssh)
  std::string comment;                      ///< --comment: srun --comment (Slurm backend; metadata only)
  std::string account;                      ///< --account: srun --account (Slurm backend)
  std::string logLevel;                     ///< --log_level debug|info|warning|error|critical (-q: error);
                                            ///< empty: DSRUN_LOG_LEVEL decides (default info)

  // --- how each rank is started and stopped: --python, --module, --no_python, --no_local_rank,
  // --enable_each_rank_log, --bind_cores_to_rank, --bind_core_list, --tag_output, --kill_grace_s,
  // --exit_timeout_s (launch.jobId and launch.savePid are filled at launch: launchSettings()) ---
  RankLaunchSettings launch;

  // --- dsrun's own flags ---
  bool dryRun = false;             ///< --dry_run: print the plan as JSON, launch nothing
  int maxRestarts = 100;           ///< --max_restarts: failure restarts of an elastic job (DeepSpeed's 100)
  bool maxRestartsGiven = false;   ///< --max_restarts was on the command line (non-elastic jobs restart only then)
  double elasticTimeoutS = 100;    ///< --elastic_timeout_s: wait below the minimum (DeepSpeed's rendezvous 100 s)
  int agentPort = kDefaultAgentPort;  ///< --agent_port (agent backend)
  int agentHeartbeatMs = 500;         ///< --agent_heartbeat_ms: the agents' beat interval dsrun asks for
  int agentHeartbeatMisses = 5;       ///< --agent_heartbeat_misses: silence of this many beats = host lost
  bool meshProbe = true;              ///< agent backend: all-pairs probe before the launch (--no_mesh_probe: off)
  int treeWidth = kTreeWidthAuto;     ///< --tree_width: agent backend launches through a tree of this width
                                      ///< (agent_tree_plan.h); 0: dsrun dials every agent (the star); auto:
                                      ///< chosen by the host count (agent_tree_choice.h)
  bool agentRendezvous = false;       ///< --rendezvous agent: the ranks' store is served by the agents
                                      ///< (docs/rendezvous.md); false (--rendezvous store): rank 0's TCPStore
  std::string tlsDir;                 ///< --tls_dir (agent backend)
  std::string sshConfig;              ///< --ssh_config FILE (ssh backend); empty = ~/.ssh/config
  std::string makeTls;                ///< --make_tls DIR: create the CA + the launcher's certificate, then exit
  std::string makeNodeCert;           ///< --make_node_cert DIR: issue a node certificate from DIR's CA, then exit
  std::string certHost;               ///< --host NAME: the node --make_node_cert issues for
  std::vector<std::string> certAddrs; ///< --addr IP (repeatable or comma-separated): its addresses
  std::string certOut;                ///< --out NODEDIR: the node's new TLS directory
  std::string revokeCert;             ///< --revoke_cert DIR: add --cert to DIR's revocation list, then exit
  std::string certFile;               ///< --cert FILE: the certificate --revoke_cert revokes
  std::string renewLauncherCert;      ///< --renew_launcher_cert DIR: revoke + replace DIR's launcher certificate
  bool help = false;                  ///< -h/--help
  bool version = false;               ///< --version

  // --- the user's program ---
  std::string userScript;              ///< first positional argument
  std::vector<std::string> userArgs;   ///< everything after it, byte for byte
};

/// Parses `args` (without argv[0]). Both `--flag=value` and `--flag value` work; unique prefixes of long
/// flags are accepted as argparse does, and so are dashed spellings (`--num-gpus`, as torchrun accepts both).
/// Throws ParseError naming the flag and the bad value; an unknown flag's error suggests the closest known one.
Options parseOptions(const std::vector<std::string>& args);

/// options.launch completed with what only a launch knows: the planned job id and, with --save_pid, dsrun's
/// own pid (`launcherPid`), which names DeepSpeed's /tmp/<pid>.deepspeed file.
RankLaunchSettings launchSettings(const Options& options, const std::string& jobId, int launcherPid);

/// How many failure restarts of the whole world the job may use: --max_restarts (100 when not given) for an
/// elastic job, as DeepSpeed; --max_restarts (0 when not given, torchrun's default) for any other job.
int restartBudget(const Options& options);

/// The --help text.
std::string usageText();

}  // namespace dsrun::launcher
