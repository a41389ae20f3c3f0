#pragma once
// The environment contract between the launcher and the ranks it starts: the variable names dsrun
// sets for every rank. The runtime reads the same names, and this is the only dsrun header it shares.

namespace dsrun {

inline constexpr const char* kEnvRank = "RANK";
inline constexpr const char* kEnvLocalRank = "LOCAL_RANK";
inline constexpr const char* kEnvWorldSize = "WORLD_SIZE";
inline constexpr const char* kEnvLocalSize = "LOCAL_SIZE";
inline constexpr const char* kEnvCrossRank = "CROSS_RANK";  ///< node rank
inline constexpr const char* kEnvCrossSize = "CROSS_SIZE";  ///< number of nodes
inline constexpr const char* kEnvMasterAddr = "MASTER_ADDR";
inline constexpr const char* kEnvMasterPort = "MASTER_PORT";
inline constexpr const char* kEnvCudaVisibleDevices = "CUDA_VISIBLE_DEVICES";
inline constexpr const char* kEnvJobId = "DSRUN_JOB_ID";
/// Per-rank file the engine rewrites with its global step after every optimizer step (hang detection):
/// one 21-byte record "%20lld\n" at offset 0 (runtime/progress_file.h). Unset: no progress is written.
inline constexpr const char* kEnvProgressFile = "DSRUN_PROGRESS_FILE";

// Every job (docs/launcher.md "torchrun's variables"): the restart counter (failure restarts of
// the whole world: --max_restarts, or the elastic controller's; scale-ups are not counted), the same on every
// rank, under dsrun's and torchrun's names, and torchrun's per-rank names.
inline constexpr const char* kEnvRestartCount = "DSRUN_RESTART_COUNT";
inline constexpr const char* kEnvMaxRestarts = "DSRUN_MAX_RESTARTS";
inline constexpr const char* kEnvTorchRestartCount = "TORCHELASTIC_RESTART_COUNT";
inline constexpr const char* kEnvTorchMaxRestarts = "TORCHELASTIC_MAX_RESTARTS";
inline constexpr const char* kEnvTorchRunId = "TORCHELASTIC_RUN_ID";
inline constexpr const char* kEnvGroupRank = "GROUP_RANK";              ///< torchrun: node rank
inline constexpr const char* kEnvGroupWorldSize = "GROUP_WORLD_SIZE";   ///< torchrun: number of nodes
inline constexpr const char* kEnvLocalWorldSize = "LOCAL_WORLD_SIZE";   ///< torchrun: ranks on this node
inline constexpr const char* kEnvRoleRank = "ROLE_RANK";                ///< torchrun: rank within the role
inline constexpr const char* kEnvRoleWorldSize = "ROLE_WORLD_SIZE";
inline constexpr const char* kEnvRoleName = "ROLE_NAME";

inline constexpr int kDefaultMasterPort = 29500;  ///< TORCH_DISTRIBUTED_DEFAULT_PORT

}  // namespace dsrun
