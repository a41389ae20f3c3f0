#pragma once
// planWorld: the pure planner from options + what the machine and the backend told us to the whole job: which hosts run
// which ranks, with which environment and argv. Backends (launcher/backends/) and --dry_run consume it.

#include <optional>
#include <string>
#include <vector>

#include "launcher/environment.h"
#include "launcher/hostfile.h"
#include "launcher/options.h"
#include "launcher/rank_program.h"
#include "launcher/resource_spec.h"

namespace dsrun::launcher {

/// How much of every rank planWorld and planRanks plan.
enum class RankDetail {
  Commands,  ///< everything: each rank's argv and environment too (a dry run, and every launch that sends them)
  /// Rank, local rank, host, slot and cores only (every error planning can raise is raised here too): a
  /// launch whose backend plans each node's commands when it needs them (withCommand); at 10,000 hosts x 8
  /// ranks the commands are ~0.4 s of CPU.
  Slots,
  /// No ranks at all (plan.ranks empty), but every error planning them would raise is raised: a launch's
  /// draft, which only learns the rendezvous from its hosts.
  None,
};

/// One rank of the job.
struct PlannedRank {
  int rank = 0;                   ///< global rank (RANK)
  int localRank = 0;              ///< position on its node (LOCAL_RANK)
  int nodeRank = 0;               ///< index of its host in WorldPlan::hosts (CROSS_RANK)
  std::string host;               ///< host name as in the hostfile
  int slot = 0;                   ///< the slot (GPU id) it owns
  std::vector<std::string> argv;  ///< the command, e.g. {"python3", "-u", SCRIPT, "--local_rank=0", ARGS...}
  EnvMap env;                     ///< every variable dsrun sets for it (propagated + rank contract)
  // argv and env are empty in a plan made with RankDetail::Slots (WorldPlan::deferredCommands).
  std::vector<int> cores;         ///< CPU ids to bind to (--bind_cores_to_rank); empty = no binding
};

/// An elastic job's limits (--elastic_training; DeepSpeed's defaults resolved).
struct ElasticBounds {
  int minNodes = 1;        ///< --min_elastic_nodes
  int maxNodes = 1;        ///< --max_elastic_nodes, capped at the candidates
  int maxRestarts = 100;   ///< --max_restarts
  double timeoutS = 100;   ///< --elastic_timeout_s
  ResourcePool candidates; ///< every host the job may use, in hostfile order (after --include/--exclude)
};

/// The resolved job.
struct WorldPlan {
  ResourcePool hosts;               ///< active hosts in hostfile order with their slots (DeepSpeed world_info)
  std::vector<PlannedRank> ranks;   ///< all ranks of all hosts, in rank order (host by host)
  std::string masterAddr;           ///< MASTER_ADDR
  std::string masterAddrHost;       ///< the host MASTER_ADDR was inferred from (empty: given or 127.0.0.1)
  int masterPort = 29500;           ///< MASTER_PORT
  std::string jobId;                ///< DSRUN_JOB_ID
  bool multiNode = false;           ///< true: a multi-node backend starts the ranks on their hosts
  std::string launcher;             ///< "local", or the multi-node backend's name (Options::launcher)
  int localNode = 0;                ///< local mode: the host this machine runs (0, or --node_rank with --no_ssh)
  EnvMap exports;                   ///< propagated variables (part of every rank's env); for remote exports
  std::vector<std::string> notes;   ///< messages for the user (one line each), e.g. ignored settings
  bool hostsFromHostfile = false;   ///< hosts are the hostfile's names (not the implicit "localhost")
  std::optional<ElasticBounds> elastic;  ///< --elastic_training: hosts is the first world, re-formed while running
  std::vector<int> coreList;        ///< --bind_cores_to_rank: the cores each node shares out among its ranks
  /// Set: the ranks were planned with RankDetail::Slots (without argv and env; withCommand plans a rank's from
  /// this program) or RankDetail::None. Unset: every rank is planned in full.
  std::optional<RankProgram> deferredCommands;

  int worldSize() const { return static_cast<int>(ranks.size()); }
  /// Ranks of host `nodeRank`, in local-rank order.
  std::vector<const PlannedRank*> ranksOnNode(int nodeRank) const;
};

/// What planWorld needs from the machine; gathered by gatherPlanInputs() (launcher_app.h) or set by tests.
struct PlanInputs {
  std::optional<Hostfile> hostfile;  ///< nullopt: local mode
  EnvMap launcherEnv;                ///< the launcher's environment
  std::vector<EnvFile> envFiles;     ///< existing .deepspeed_env files, lowest precedence first
  std::string cwd;                   ///< launch directory (PYTHONPATH prefix)
  int gpuCount = 0;                  ///< GPUs on this machine (local mode pool)
  int physicalCores = 1;             ///< cores shared out by --bind_cores_to_rank without --bind_core_list
  std::string jobId;                 ///< DSRUN_JOB_ID for this job
};

/// What a launch learned about the rendezvous before planning (Backend::prepareLaunch, launcher_app.cc); a
/// dry run learns nothing and plans with the default value.
struct Rendezvous {
  /// MASTER_ADDR as inferred from the plan's masterAddrHost (ssh `hostname -I`, or the address its agent
  /// answered on); empty: not learned, and the plan shows how a launch would find it.
  std::string inferredAddr;
  /// MASTER_PORT as a pre-flight checked or picked it (--master_port 0); nullopt: --master_port.
  std::optional<int> masterPort;
};

/// The RankProgram of dsrun's command line.
RankProgram rankProgram(const Options& options);

/// Plans the job. Pure: the same arguments give the same plan, and nothing is asked of any host.
/// MASTER_ADDR: --master_addr if given, else, when the ranks span several hosts (multi-node, or --no_ssh over
/// several hosts), the address inferred from the first active host (plan.masterAddrHost):
/// `rendezvous.inferredAddr`, or when it is empty a placeholder saying how a launch would infer it; else
/// 127.0.0.1. MASTER_PORT: rendezvous.masterPort, else --master_port.
/// Throws ConfigError/ParseError for everything the user must fix (see resolveActiveResources, plus
/// --no_python with --module, --no_ssh without a valid --node_rank, --bind_cores_to_rank with
/// KMP_AFFINITY set or too few cores, --elastic_training off the agent backend or with bad bounds, --autotuning).
WorldPlan planWorld(const Options& options, const PlanInputs& inputs, const Rendezvous& rendezvous,
                    RankDetail detail = RankDetail::Commands);

/// Fills plan.ranks for plan.hosts (contiguous ranks, host by host) from plan.masterAddr, masterPort, jobId,
/// exports and coreList: the second half of planWorld, reused by the elastic controller and the restart loop
/// for every new world, and by dsrun-launch for its node's share. RankDetail::Slots leaves argv and env out
/// and keeps `program` in plan.deferredCommands; RankDetail::None plans no rank, only their checks.
void planRanks(WorldPlan& plan, const RankProgram& program, RankDetail detail = RankDetail::Commands);

/// Rank `r` of `plan` (planned with RankDetail::Slots) with its argv and environment: exactly what planRanks
/// with RankDetail::Commands plans for it. Pure, so threads may plan different ranks of one plan at once.
PlannedRank withCommand(const WorldPlan& plan, const PlannedRank& r);

/// The cores --bind_cores_to_rank shares out on each node: --bind_core_list, else cores 0..N-1 where N is
/// `physicalCores` (DeepSpeed's psutil.cpu_count(logical=False)). Throws ConfigError with KMP_AFFINITY set in
/// `env` (the launcher's environment).
std::vector<int> bindableCores(const RankLaunchSettings& launch, const EnvMap& env, int physicalCores);

}  // namespace dsrun::launcher
