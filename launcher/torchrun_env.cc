#include "launcher/torchrun_env.h"

#include <string>

#include "common/env_contract.h"

namespace dsrun::launcher {

EnvMap torchrunJobEnv(int restartCount, int maxRestarts, const std::string& runId) {
  EnvMap env;
  env[kEnvRestartCount] = std::to_string(restartCount);
  env[kEnvMaxRestarts] = std::to_string(maxRestarts);
  env[kEnvTorchRestartCount] = std::to_string(restartCount);
  env[kEnvTorchMaxRestarts] = std::to_string(maxRestarts);
  env[kEnvTorchRunId] = runId;
  return env;
}

int inheritedRestartCount(const EnvMap& launcherEnv) {
  for (const char* name : {kEnvRestartCount, kEnvTorchRestartCount}) {
    const auto it = launcherEnv.find(name);
    if (it == launcherEnv.end()) continue;
    const std::string& v = it->second;
    if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) continue;
    return std::stoi(v);
  }
  return 0;
}

void addTorchrunRankEnv(EnvMap& env, int rank, int worldSize, int nodeRank, int nodeCount, int localSize) {
  env[kEnvGroupRank] = std::to_string(nodeRank);
  env[kEnvGroupWorldSize] = std::to_string(nodeCount);
  env[kEnvLocalWorldSize] = std::to_string(localSize);
  env[kEnvRoleRank] = std::to_string(rank);
  env[kEnvRoleWorldSize] = std::to_string(worldSize);
  env[kEnvRoleName] = "default";
}

}  // namespace dsrun::launcher
