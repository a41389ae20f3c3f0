#include "launcher/torchrun_env.h"

#include <string>

#include "common/env_contract.h"

namespace dsrun {

EnvMap torchrunJobEnv(int restartCount, int maxRestarts, const std::string& runId) {
  EnvMap env;
  env[kEnvRestartCount] = std::to_string(restartCount);
  env[kEnvMaxRestarts] = std::to_string(maxRestarts);
  env[kEnvTorchRestartCount] = std::to_string(restartCount);
  env[kEnvTorchMaxRestarts] = std::to_string(maxRestarts);
  env[kEnvTorchRunId] = runId;
  return env;
}

void addTorchrunRankEnv(EnvMap& env, int rank, int worldSize, int nodeRank, int nodeCount, int localSize) {
  env[kEnvGroupRank] = std::to_string(nodeRank);
  env[kEnvGroupWorldSize] = std::to_string(nodeCount);
  env[kEnvLocalWorldSize] = std::to_string(localSize);
  env[kEnvRoleRank] = std::to_string(rank);
  env[kEnvRoleWorldSize] = std::to_string(worldSize);
  env[kEnvRoleName] = "default";
}

}  // namespace dsrun
