#pragma once
// The pure parts of an ssh elastic round (ssh_job.h, ssh_elastic_rounds.h): the words for a host whose
// session ended without an exit status, and what an elastic round adds to each host's remote line. The
// round's facts and outcome are the remote-job driver's (remote_job/round_facts.h). No libssh, no sockets,
// so it is unit-tested from tables (tests/launcher/backends/ssh_round_test.cc).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/elastic_training/elastic_rounds.h"
#include "launcher/remote_job/round_facts.h"
#include "launcher/world_plan.h"

namespace dsrun::launcher {

/// How one host's session ended.
enum class SessionEnd {
  Exited,  ///< dsrun-launch sent its exit status: the host is fine
  Closed,  ///< the channel or the connection closed without an exit status (dsrun-launch or sshd killed,
           ///< the host rebooted, a reset): the host is lost
  Silent,  ///< the socket timed out (TCP_USER_TIMEOUT: nothing we sent was acknowledged): the host is lost
};

/// `exitStatus` as SshSession::exitStatus() (-1: none); `socketError` is libssh's error text once the
/// connection broke ("" while it is fine). A timed-out socket (ETIMEDOUT's text) is Silent.
SessionEnd classifySessionEnd(int exitStatus, const std::string& socketError);

/// The cause a lost host is reported with, e.g. "ssh dsn3:22: host dsn3 silent (our heartbeats
/// unacknowledged; heartbeat budget 2500 ms = 5 x 500 ms)", "ssh dsn2:22: dsrun-launch on dsn2 ended without an exit
/// status (killed, or its sshd was)" or "ssh dsn2:22: connection to dsn2 lost (Socket error: disconnected)".
/// `end` must not be Exited.
std::string lostHostCause(const std::string& peer, const std::string& host, SessionEnd end,
                          const std::string& socketError, int heartbeatMs, int heartbeatMisses);

/// The remote-job driver's round facts under their ssh names (ssh_round_test.cc, ssh_elastic_rounds.cc).
using SshStopEvent = StopEvent;
using SshRoundFacts = RoundFacts;
inline RoundOutcome sshRoundOutcome(const SshRoundFacts& facts) { return roundOutcome(facts); }

/// The variables an elastic round exports to node `nodeRank` besides plan.exports: the restart counter and
/// torchrun's names the controller put in the env of that node's ranks (dsrun-launch computes RANK,
/// WORLD_SIZE, ... itself, and ROLE_RANK = RANK once ROLE_WORLD_SIZE is among the exports).
EnvMap elasticNodeExports(const WorldPlan& plan, int nodeRank);

/// `launchArgv` (nodeLaunchArgv with --watch_stdin) with --stdin_timeout_ms=MS after --watch_stdin: the
/// node stops its ranks when dsrun's heartbeats stop for that long.
std::vector<std::string> withStdinTimeout(std::vector<std::string> launchArgv, int ms);

}  // namespace dsrun::launcher
