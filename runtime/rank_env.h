#pragma once
// Pure discovery of this process's place in the job from its environment variables, torch-free so its
// tests start in milliseconds. dsrun (and torchrun, DeepSpeed's launcher) set RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR, MASTER_PORT; when RANK and WORLD_SIZE are absent, the rank comes from the
// process manager that started us, as DeepSpeed's comm.init_distributed falls back to MPI discovery:
// OpenMPI (OMPI_COMM_WORLD_*), MPICH/Intel MPI (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID), Slurm (SLURM_*).

#include <functional>
#include <optional>
#include <string>

namespace dsrt {

/// Reads one variable; std::nullopt when unset. Tests pass a map, production passes getenv.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

/// Where each rank lives and how to reach rank 0's store.
struct RankEnv {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  /// Which variables the rank came from: "env", "openmpi", "mpich" or "slurm" (for logs).
  std::string source = "env";
};

/// Resolves RankEnv from `env`. MASTER_PORT defaults to 29500 (DeepSpeed's distributed_port);
/// MASTER_ADDR is required when worldSize > 1; LOCAL_RANK falls back to the process manager's local
/// rank, then to 0. Throws std::invalid_argument with ONE line naming every missing or inconsistent
/// variable and its value, e.g. "distributed init: missing WORLD_SIZE, MASTER_ADDR (RANK=1 from env)".
RankEnv resolveRankEnv(const EnvLookup& env);

/// EnvLookup over the process environment (getenv).
EnvLookup processEnv();

}  // namespace dsrt
