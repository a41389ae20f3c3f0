#pragma once
// Root cause across hosts (issue 12, item 8): every failure a job sees carries the time it happened
// (the agent's wall clock when it reaped the rank; for a lost agent, when it was last heard from).
// The earliest is the one named and decides the exit code; the later ones are counted as its
// consequences (a peer's "connection closed" after rank 3 raised is not the cause). Pure functions.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dsrun {

struct TimedFailure {
  int64_t timeUs = 0;  ///< when it happened, microseconds since the Unix epoch
  int exitCode = 1;    ///< shell-style code it stands for (128+signal for a signal)
  std::string what;    ///< "rank 3 (dsn2 pid 77) exited with code 3"
  std::string host = {};  ///< where it happened (the rank's host, or the lost agent's)
  bool hostLost = false;  ///< the host's agent was lost or went silent (not a rank's own failure)
};

/// Index of the earliest failure (the first reported wins a tie). `failures` must not be empty.
size_t earliestFailure(const std::vector<TimedFailure>& failures);

/// "dsrun: <earliest>; terminated N other ranks[; 2 later failures counted as its consequences:
/// <what>, <what>]" (at most 3 named, then "and K more").
std::string rootCauseLine(const std::vector<TimedFailure>& failures, size_t terminated);

}  // namespace dsrun
