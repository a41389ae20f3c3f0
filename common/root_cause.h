#pragma once
// Root cause across hosts: every failure a job sees carries the time it happened
// (the agent's wall clock when it reaped the rank; for a lost agent, when it was last heard from).
// The earliest is the one named and decides the exit code; the later ones are counted as its
// consequences (a peer's "connection closed" after rank 3 raised is not the cause). Pure functions.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dsrun {

struct TimedFailure {
  int64_t timeUs = 0;  ///< when it happened, microseconds since the Unix epoch
  int exitCode = 1;    ///< shell-style code it stands for (128+signal for a signal)
  std::string what;    ///< "rank 3 (dsn2 pid 77) exited with code 3"
  std::string host = {};  ///< where it happened (the rank's host, or the lost agent's)
  bool hostLost = false;  ///< the host's agent was lost or went silent (not a rank's own failure)
};

/// What the closing summary of a failed job says about its first failing rank (torchrun's "Root Cause (first
/// observed failure)" block, in dsrun's words).
struct RootCause {
  std::string program;                  ///< the user's script or program (the title names it)
  int rank = -1;                        ///< global rank; -1 when only the host is known
  int localRank = -1;                   ///< its position on its host; -1 when unknown
  std::string host;                     ///< where it ran
  int pid = -1;                         ///< its pid there; -1 when unknown
  std::string cause;                    ///< "exited with code 1", "was killed by signal 9 (SIGKILL)"
  int exitCode = 1;                     ///< shell-style (128+signal)
  std::vector<std::string> stderrTail;  ///< the last lines it wrote to stderr, oldest first
  std::string logFile;                  ///< with --enable_each_rank_log: the file its output went to
  bool stderrCaptured = true;           ///< false: its stderr did not pass through dsrun (MPI, Slurm tasks)
};

/// Most stderr lines a RootCause quotes (a Python traceback's last frames and its exception).
inline constexpr size_t kRootCauseTailLines = 10;

/// Appends `line` to `tail`, keeping the last kRootCauseTailLines lines, each cut to 400 bytes.
void keepTailLine(std::vector<std::string>& tail, std::string_view line);

/// The block dsrun ends a failed job with, one line per element, each starting "dsrun: ":
///   ======== / PROGRAM FAILED / Root Cause (first observed failure): / rank, host, exitcode (pid, signal),
///   log file (when there is one), the stderr tail indented (or where to look when there is none) / ========
std::vector<std::string> rootCauseBlock(const RootCause& cause);

/// Index of the earliest failure (the first reported wins a tie). `failures` must not be empty.
size_t earliestFailure(const std::vector<TimedFailure>& failures);

/// "dsrun: <earliest>; terminated N other ranks[; 2 later failures counted as its consequences:
/// <what>, <what>]" (at most 3 named, then "and K more").
std::string rootCauseLine(const std::vector<TimedFailure>& failures, size_t terminated);

}  // namespace dsrun
