#include "launcher/backends/ssh/ssh_round.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/env_contract.h"
#include "common/error.h"
#include "common/strings.h"

namespace dsrun::launcher {

SessionEnd classifySessionEnd(int exitStatus, const std::string& socketError) {
  if (exitStatus >= 0) return SessionEnd::Exited;
  // libssh reports a socket error as "Socket error: <strerror>"; TCP_USER_TIMEOUT ends a connection with
  // ETIMEDOUT, a reset or an orderly close with anything else.
  if (socketError.find(std::strerror(ETIMEDOUT)) != std::string::npos) return SessionEnd::Silent;
  return SessionEnd::Closed;
}

std::string lostHostCause(const std::string& peer, const std::string& host, SessionEnd end,
                          const std::string& socketError, int heartbeatMs, int heartbeatMisses) {
  DSRUN_CHECK(end != SessionEnd::Exited, "lostHostCause of a session that exited");
  if (end == SessionEnd::Silent) {
    return strCat("ssh ", peer, ": host ", host, " silent (our heartbeats unacknowledged; heartbeat budget ",
                  heartbeatMs * heartbeatMisses, " ms = ", heartbeatMisses, " x ", heartbeatMs, " ms)");
  }
  if (socketError.empty()) {
    return strCat("ssh ", peer, ": dsrun-launch on ", host, " ended without an exit status (killed, or its sshd was)");
  }
  return strCat("ssh ", peer, ": connection to ", host, " lost (", socketError, ")");
}

EnvMap elasticNodeExports(const WorldPlan& plan, int nodeRank) {
  EnvMap out;
  const std::vector<const PlannedRank*> ranks = plan.ranksOnNode(nodeRank);
  if (!plan.elastic || ranks.empty()) return out;
  for (const char* name : {kEnvRestartCount, kEnvMaxRestarts, kEnvTorchRestartCount, kEnvTorchMaxRestarts,
                           kEnvTorchRunId, kEnvGroupRank, kEnvGroupWorldSize, kEnvLocalWorldSize, kEnvRoleWorldSize,
                           kEnvRoleName}) {
    const auto it = ranks.front()->env.find(name);
    if (it != ranks.front()->env.end()) out[name] = it->second;
  }
  return out;
}

std::vector<std::string> withStdinTimeout(std::vector<std::string> launchArgv, int ms) {
  const auto at = std::find(launchArgv.begin(), launchArgv.end(), "--watch_stdin");
  DSRUN_CHECK(at != launchArgv.end(), "withStdinTimeout needs a --watch_stdin launch line");
  launchArgv.insert(at + 1, strCat("--stdin_timeout_ms=", ms));
  return launchArgv;
}

}  // namespace dsrun::launcher
