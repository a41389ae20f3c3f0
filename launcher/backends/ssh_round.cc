#include "launcher/backends/ssh_round.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/env_contract.h"
#include "common/error.h"
#include "common/strings.h"

namespace dsrun {

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

RoundOutcome sshRoundOutcome(const SshRoundFacts& facts) {
  using End = RoundOutcome::End;
  RoundOutcome out;
  out.exitCode = facts.exitCode;
  const auto add = [](std::vector<std::string>& list, const std::string& host) {
    if (std::find(list.begin(), list.end(), host) == list.end()) list.push_back(host);
  };
  for (const SshStopEvent& e : facts.events) {
    if (e.lost) add(out.lostHosts, e.host);
  }
  if (facts.signalled) {
    out.end = End::Signalled;
  } else if (!facts.events.empty()) {
    out.end = End::Failed;
    out.cause = facts.events.front().cause;
    add(out.failedHosts, facts.events.front().host);
  } else if (facts.rescaled) {
    out.end = End::Rescaled;
  } else {
    out.end = facts.exitCode == 0 ? End::Completed : End::Failed;
    if (facts.exitCode != 0) out.cause = strCat("the job exited with code ", facts.exitCode);
  }
  return out;
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

}  // namespace dsrun
