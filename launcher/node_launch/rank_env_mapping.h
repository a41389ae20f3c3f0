#pragma once
// Rank mode of dsrun-launch: an MPI or Slurm task learns who it is from its launcher's variables
// (OMPI_COMM_WORLD_*, PMI_*/MPI_LOCALRANKID, MV2_COMM_WORLD_*, SLURM_*) and gets dsrun's environment
// contract from them. Pure: environment in, environment out.

#include <string>
#include <vector>

#include "launcher/environment.h"

namespace dsrun::launcher {

/// Where a task's identity came from.
struct RankIdentity {
  int rank = 0;
  int localRank = 0;
  int worldSize = 1;
  int localSize = 1;
  int crossRank = 0;  ///< node index
  int crossSize = 1;  ///< number of nodes
};

/// Flavors --rank_env accepts ("auto" tries openmpi, mvapich, slurm, then mpich in that order).
extern const std::vector<std::string> kRankEnvFlavors;

/// Reads the identity for `flavor` from `env`. Throws ConfigError naming the flavor and the missing or
/// inconsistent variables (e.g. PMIX_RANK and PMI_RANK disagreeing, as DeepSpeed's launcher_helper
/// refuses) or for an unknown flavor. The node index is SLURM_NODEID under Slurm, else
/// (rank - localRank) / localSize, which is exact for the block layouts mpirun uses with -ppn/hostfiles.
RankIdentity rankIdentityFromEnv(const std::string& flavor, const EnvMap& env);

/// `env` plus RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_SIZE, CROSS_RANK, CROSS_SIZE, MASTER_ADDR, MASTER_PORT
/// and (when `jobId` is not empty) DSRUN_JOB_ID.
EnvMap withRankContract(EnvMap env, const RankIdentity& id, const std::string& masterAddr, int masterPort,
                        const std::string& jobId);

}  // namespace dsrun::launcher
