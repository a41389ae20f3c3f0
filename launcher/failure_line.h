#pragma once
// What dsrun does with the lines a node's dsrun-launch reports (their format and parsers are
// supervision/launch_lines.h): it collects the root-cause lines of every node and words the job's
// closing block for its first failure.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "supervision/launch_lines.h"

namespace dsrun::launcher {

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

}  // namespace dsrun::launcher
