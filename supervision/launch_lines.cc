#include "common/control_line.h"

#include <csignal>

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

}  // namespace dsrun
