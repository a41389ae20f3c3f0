#pragma once
// Recognising a rank failure in the output a multi-node backend forwards (pdsh, mpirun, srun, ssh), so
// that dsrun can stop every node at the first failure and name it. Two lines are recognised anywhere in a
// forwarded line (pdsh prefixes "HOST: "):
//   "dsrun: rank R (HOST pid P) <cause>[; ...]"      (JobSupervisor and dsrun-launch's rank mode)
//   "dsrun-launch: HOST (node N, ranks A-B) exited with code C"   (dsrun-launch's node summary)

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dsrun {

struct RankFailure {
  std::string host;   ///< where it ran
  int rank = -1;      ///< global rank; -1 when only the node is known
  int pid = -1;       ///< its pid on `host`; -1 when unknown
  std::string cause;  ///< "exited with code 3", "was killed by signal 9 (SIGKILL)"
  int exitCode = 1;   ///< shell-style code (128+signal for a signal)
};

/// The failure `line` reports, if it is one of the lines above.
std::optional<RankFailure> parseFailureLine(std::string_view line);

/// A "dsrun: rank R (HOST pid P) finished cleanly" line (dsrun-launch with --exit_timeout_s): the rank,
/// host and pid, with cause "finished cleanly" and exit code 0.
std::optional<RankFailure> parseCleanExitLine(std::string_view line);

/// One root-cause line of dsrun-launch (supervision/local_job.h, rootCauseAsLines), found anywhere in a forwarded line:
///   "dsrun: rank R (HOST) stderr| TEXT"    one line of the failing rank's stderr tail, oldest first
///   "dsrun: rank R (HOST) log file: PATH"  its --enable_each_rank_log file
struct RootCauseLine {
  int rank = -1;       ///< the failing rank
  bool isLog = false;  ///< true: `text` is its log file's path
  std::string text;    ///< the stderr line, or the path
};
std::optional<RootCauseLine> parseRootCauseLine(std::string_view line);

/// Collects the root-cause lines of every node, by rank, and words the job's closing block for its first
/// failure (common/root_cause.h) from what it collected.
class RootCauseCollector {
 public:
  /// True when `line` was a root-cause line (it is kept, and need not be shown as it is).
  bool take(std::string_view line);
  /// The closing block for `failure` of `program`: its stderr tail and log file when its node sent them.
  std::vector<std::string> block(const RankFailure& failure, const std::string& program) const;

 private:
  std::map<int, std::vector<std::string>> tails_;  ///< rank -> stderr tail
  std::map<int, std::string> logs_;                ///< rank -> log file
};

/// "rank 5 on dsn3 (pid 1234) exited with code 3" (or "a rank of ranks 4-5 on dsn3 ..." when the rank is
/// unknown).
std::string describeFailure(const RankFailure& failure);

}  // namespace dsrun
