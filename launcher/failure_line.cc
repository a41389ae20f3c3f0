#include "launcher/failure_line.h"

#include "common/root_cause.h"
#include "common/strings.h"

namespace dsrun::launcher {

bool RootCauseCollector::take(std::string_view line) {
  std::optional<RootCauseLine> parsed = parseRootCauseLine(line);
  if (!parsed) return false;
  if (parsed->isLog) {
    logs_[parsed->rank] = parsed->text;
  } else {
    keepTailLine(tails_[parsed->rank], parsed->text);
  }
  return true;
}

std::vector<std::string> RootCauseCollector::block(const RankFailure& failure, const std::string& program) const {
  RootCause cause;
  cause.program = program;
  cause.rank = failure.rank;
  cause.host = failure.host;
  cause.pid = failure.pid;
  cause.cause = failure.cause;
  cause.exitCode = failure.exitCode;
  if (auto it = tails_.find(failure.rank); it != tails_.end()) cause.stderrTail = it->second;
  if (auto it = logs_.find(failure.rank); it != logs_.end()) cause.logFile = it->second;
  // dsrun-launch sends a tail only for the ranks it supervises itself (pdsh, ssh); an empty stderr is not
  // told apart from one that never passed through it.
  cause.stderrCaptured = !cause.stderrTail.empty() || !cause.logFile.empty();
  return rootCauseBlock(cause);
}

std::string describeFailure(const RankFailure& f) {
  if (f.rank < 0) return strCat("a rank on ", f.host, " ", f.cause);
  return strCat("rank ", f.rank, " on ", f.host, " (pid ", f.pid, ") ", f.cause);
}

}  // namespace dsrun::launcher
