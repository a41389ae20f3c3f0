#pragma once
// torchrun's per-rank variables (torch/distributed/elastic/agent/server/local_elastic_agent.py), set on every
// job and backend so that scripts written for torchrun find them. Pure functions.
//
// Left out on purpose (docs/launcher.md "torchrun's variables"):
// - TORCHELASTIC_USE_AGENT_STORE: torchrun's agent hosts the TCPStore and tells the ranks to join it as
//   clients ("True"); dsrun has no such store, rank 0 hosts it, and "False" means the same as unset;
// - NCCL_ASYNC_ERROR_HANDLING (torch 1.x) / TORCH_NCCL_ASYNC_ERROR_HANDLING (torch 2.x), which torchrun
//   sets to 1 unless the user did: DeepSpeed's launcher does not, and a user who wants it exports it.

#include "launcher/environment.h"

namespace dsrun::launcher {

/// The job-wide ones: TORCHELASTIC_RESTART_COUNT / TORCHELASTIC_MAX_RESTARTS (also as DSRUN_RESTART_COUNT /
/// DSRUN_MAX_RESTARTS) and TORCHELASTIC_RUN_ID (`runId`: the job id of the first attempt, the same across
/// restarts, as torchrun's rendezvous id is). Part of a plan's exports, so they reach every node as exported
/// variables do.
EnvMap torchrunJobEnv(int restartCount, int maxRestarts, const std::string& runId);

/// The restart count dsrun starts from: DSRUN_RESTART_COUNT, else TORCHELASTIC_RESTART_COUNT of `launcherEnv`
/// when it is a non-negative integer (something restarting dsrun itself counts there), else 0.
int inheritedRestartCount(const EnvMap& launcherEnv);

/// The per-rank ones for global `rank` of `worldSize` on node `nodeRank` of `nodeCount` with `localSize`
/// ranks: GROUP_RANK, GROUP_WORLD_SIZE, LOCAL_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, ROLE_NAME (one role,
/// "default", torchrun's default --role, so ROLE_RANK = RANK).
void addTorchrunRankEnv(EnvMap& env, int rank, int worldSize, int nodeRank, int nodeCount, int localSize);

}  // namespace dsrun::launcher
