#include "supervision/launch_lines.h"

#include <csignal>
#include <regex>

#include "common/error.h"
#include "common/strings.h"

namespace dsrun {

namespace {

constexpr std::string_view kVerb = "signal ";

struct Named {
  int signal;
  std::string_view name;
};

constexpr Named kNames[] = {
    {SIGINT, "INT"}, {SIGTERM, "TERM"}, {SIGHUP, "HUP"}, {SIGUSR1, "USR1"}, {SIGUSR2, "USR2"},
};

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

}  // namespace

const std::vector<int>& controlSignals() {
  static const std::vector<int> signals = [] {
    std::vector<int> out;
    for (const Named& n : kNames) out.push_back(n.signal);
    return out;
  }();
  return signals;
}

bool isStopSignal(int signal) { return signal == SIGINT || signal == SIGTERM || signal == SIGHUP; }

std::string controlSignalName(int signal) {
  for (const Named& n : kNames) {
    if (n.signal == signal) return std::string(n.name);
  }
  throw ConfigError(strCat("signal ", signal, " cannot be sent to dsrun-launch (INT, TERM, HUP, USR1, USR2 can)"));
}

std::string controlLine(int signal) { return strCat(kVerb, controlSignalName(signal), "\n"); }

std::optional<int> controlSignalFromName(std::string_view name) {
  std::string word = upper(name);
  if (startsWith(word, "SIG")) word.erase(0, 3);
  for (const Named& n : kNames) {
    if (n.name == word) return n.signal;
  }
  return std::nullopt;
}

std::optional<int> parseControlLine(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.substr(0, kVerb.size()) != kVerb) return std::nullopt;
  const std::string_view name = line.substr(kVerb.size());
  if (name.empty() || name.find_first_of(" \t") != std::string_view::npos) return std::nullopt;
  const std::optional<int> signal = controlSignalFromName(name);
  // Only the exact spelling controlLine writes: a channel is not a place for guessing.
  if (signal && controlLine(*signal) != strCat(line, "\n")) return std::nullopt;
  return signal;
}

std::string heartbeatLine() { return "\n"; }

bool isHeartbeatLine(std::string_view line) { return line.empty(); }

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

std::string rankFailureLine(int rank, const std::string& host, long pid, const std::string& cause) {
  return strCat("dsrun: rank ", rank, " (", host, " pid ", pid, ") ", cause);
}

std::string nodeExitLine(const std::string& host, int nodeRank, int firstRank, int lastRank, int code) {
  return strCat("dsrun-launch: ", host, " (node ", nodeRank, ", ranks ", firstRank, "-", lastRank, ") exited with code ",
                code);
}

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

std::string cleanExitLine(int rank, const std::string& host, long pid) {
  return strCat("dsrun: rank ", rank, " (", host, " pid ", pid, ") finished cleanly");
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

std::string rootCauseTailLine(int rank, const std::string& host, const std::string& text) {
  return strCat("dsrun: rank ", rank, " (", host, ") stderr| ", text);
}

std::string rootCauseLogLine(int rank, const std::string& host, const std::string& path) {
  return strCat("dsrun: rank ", rank, " (", host, ") log file: ", path);
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

std::string nodeStartingLine(int nodeRank, const std::string& host, int firstRank, int lastRank) {
  return strCat("dsrun-launch: node ", nodeRank, " (", host, ") starting ranks ", firstRank, "-", lastRank);
}

bool isNodeStartingLine(std::string_view line) {
  return line.rfind("dsrun-launch: node ", 0) == 0 && line.find(") starting ranks ") != std::string_view::npos;
}

}  // namespace dsrun
