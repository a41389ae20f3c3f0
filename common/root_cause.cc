#include "common/root_cause.h"

#include "common/error.h"
#include "common/strings.h"

namespace dsrun {
namespace {

constexpr size_t kNamedConsequences = 3;

std::string plural(size_t n, const char* word) { return strCat(n, " ", word, n == 1 ? "" : "s"); }

}  // namespace

size_t earliestFailure(const std::vector<TimedFailure>& failures) {
  DSRUN_CHECK(!failures.empty(), "earliestFailure of no failure");
  size_t best = 0;
  for (size_t i = 1; i < failures.size(); ++i) {
    if (failures[i].timeUs < failures[best].timeUs) best = i;
  }
  return best;
}

std::string rootCauseLine(const std::vector<TimedFailure>& failures, size_t terminated) {
  const size_t first = earliestFailure(failures);
  std::string line = strCat("dsrun: ", failures[first].what, "; terminated ", plural(terminated, "other rank"));
  if (failures.size() == 1) return line;
  std::vector<std::string> later;
  for (size_t i = 0; i < failures.size(); ++i) {
    if (i != first && later.size() < kNamedConsequences) later.push_back(failures[i].what);
  }
  const size_t more = failures.size() - 1 - later.size();
  return strCat(line, "; ", plural(failures.size() - 1, "later failure"), " counted as its consequence",
                failures.size() == 2 ? "" : "s", ": ", join(later, ", "),
                more > 0 ? strCat(" and ", more, " more") : "");
}

void keepTailLine(std::vector<std::string>& tail, std::string_view line) {
  constexpr size_t kMaxLineBytes = 400;
  if (tail.size() == kRootCauseTailLines) tail.erase(tail.begin());
  tail.emplace_back(line.substr(0, kMaxLineBytes));
}

std::vector<std::string> rootCauseBlock(const RootCause& c) {
  const std::string rule(64, '=');
  std::vector<std::string> lines = {rule, strCat(c.program.empty() ? "the job" : c.program, " FAILED"),
                                    "Root Cause (first observed failure):"};
  if (c.rank >= 0) {
    lines.push_back(strCat("  rank     : ", c.rank, c.localRank >= 0 ? strCat(" (local_rank: ", c.localRank, ")") : ""));
  }
  lines.push_back(strCat("  host     : ", c.host));
  std::string code = strCat("  exitcode : ", c.exitCode);
  std::vector<std::string> about;
  if (c.pid >= 0) about.push_back(strCat("pid: ", c.pid));
  // A signal is named in full (the code alone reads as an exit code to most users).
  if (c.cause.find("signal") != std::string::npos) about.push_back(startsWith(c.cause, "was ") ? c.cause.substr(4) : c.cause);
  if (!about.empty()) code += strCat(" (", join(about, ", "), ")");
  lines.push_back(code);
  if (!c.logFile.empty()) lines.push_back(strCat("  log file : ", c.logFile));
  if (!c.stderrTail.empty()) {
    lines.push_back(strCat("  ", c.logFile.empty() ? "stderr   : " : "output   : ",
                           c.stderrTail.size() == 1 ? "its last line" : strCat("its last ", c.stderrTail.size(), " lines"),
                           c.logFile.empty() ? "" : " (from its log file)"));
    for (const std::string& line : c.stderrTail) lines.push_back("    " + line);
  } else if (c.logFile.empty()) {
    lines.push_back(c.stderrCaptured ? "  stderr   : (it wrote nothing)"
                                     : "  stderr   : not captured by this backend; see its lines above");
  }
  lines.push_back(rule);
  for (std::string& line : lines) line = "dsrun: " + line;
  return lines;
}

}  // namespace dsrun
