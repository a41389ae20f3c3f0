#include "launcher/failure_line.h"

#include <regex>

#include "common/root_cause.h"
#include "common/strings.h"

namespace dsrun {

namespace {

int codeOfCause(const std::string& cause) {
  std::smatch m;
  static const std::regex exited(R"(exited with code (\d+))");
  static const std::regex signalled(R"(killed by signal (\d+))");
  if (std::regex_search(cause, m, exited)) return std::stoi(m[1]);
  if (std::regex_search(cause, m, signalled)) return 128 + std::stoi(m[1]);
  return 1;
}

}  // namespace

std::optional<RankFailure> parseFailureLine(std::string_view text) {
  const std::string line(text);
  static const std::regex rankLine(R"(dsrun: rank (\d+) \((\S+) pid (\d+)\) ([^;]*(exited with code \d+|killed by signal \d+[^;]*)))");
  static const std::regex nodeLine(R"(dsrun-launch: (\S+) \(node \d+, (ranks \d+-\d+)\) (exited with code (\d+)))");
  std::smatch m;
  if (std::regex_search(line, m, rankLine)) {
    RankFailure f;
    f.rank = std::stoi(m[1]);
    f.host = m[2];
    f.pid = std::stoi(m[3]);
    f.cause = m[4];
    f.exitCode = codeOfCause(f.cause);
    return f;
  }
  if (std::regex_search(line, m, nodeLine)) {
    RankFailure f;
    f.host = m[1];
    f.cause = strCat(m[3].str(), " (", m[2].str(), ")");
    f.exitCode = std::stoi(m[4]);
    return f;
  }
  return std::nullopt;
}

std::optional<RankFailure> parseCleanExitLine(std::string_view text) {
  const std::string line(text);
  static const std::regex cleanLine(R"(dsrun: rank (\d+) \((\S+) pid (\d+)\) finished cleanly)");
  std::smatch m;
  if (!std::regex_search(line, m, cleanLine)) return std::nullopt;
  RankFailure f;
  f.rank = std::stoi(m[1]);
  f.host = m[2];
  f.pid = std::stoi(m[3]);
  f.cause = "finished cleanly";
  f.exitCode = 0;
  return f;
}

std::optional<RootCauseLine> parseRootCauseLine(std::string_view text) {
  // Searched (not matched from the start): pdsh puts "HOST: " in front.
  static const std::string_view kStart = "dsrun: rank ";
  const size_t start = text.find(kStart);
  if (start == std::string_view::npos) return std::nullopt;
  const std::string line(text.substr(start));
  static const std::regex tailLine(R"(^dsrun: rank (\d+) \(\S+\) (stderr\| |log file: )((.|\n)*)$)");
  std::smatch m;
  if (!std::regex_match(line, m, tailLine)) return std::nullopt;
  return RootCauseLine{std::stoi(m[1]), m[2].str() == "log file: ", m[3]};
}

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

}  // namespace dsrun
