#pragma once
// What a remote job learned while it ran (remote_job.h), turned into the elastic controller's RoundOutcome
// (elastic_rounds.h). Pure; unit-tested from tables (tests/launcher/backends/ssh_round_test.cc).

#include <optional>
#include <string>
#include <vector>

#include "launcher/elastic_training/elastic_rounds.h"

namespace dsrun::launcher {

/// One thing that made the job stop, in the order the job saw them.
struct StopEvent {
  std::string host;   ///< hostfile name of the host it came from
  std::string cause;  ///< "rank 1 on dsn2 (pid 7) exited with code 3", or why the host was lost
  int exitCode = 1;   ///< the job's exit code if this decides it
  bool lost = false;  ///< the host's channel was lost (not a rank failure)
};

/// Everything the job knows at its end.
struct RoundFacts {
  std::vector<StopEvent> events;  ///< failures and lost hosts, first seen first
  std::optional<int> signalled;   ///< the first stop signal dsrun received
  bool rescaled = false;          ///< stopped because rescaleWanted() said so
  int exitCode = 0;               ///< what the job returns
};

/// The round's outcome: Signalled before anything else, then Failed (the first event decides the cause
/// and failedHosts; every lost host is in lostHosts), Rescaled, else Completed or Failed by exitCode.
RoundOutcome roundOutcome(const RoundFacts& facts);

}  // namespace dsrun::launcher
