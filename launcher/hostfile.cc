#include "launcher/hostfile.h"

#include <cctype>
#include <limits>
#include <unordered_map>

#include "common/error.h"
#include "common/strings.h"

namespace dsrun::launcher {

namespace {

bool isSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Splits a stripped line into its first word and the rest after the separating blanks.
void splitFirstWord(const std::string& line, std::string& word, std::string& rest) {
  size_t end = 0;
  while (end < line.size() && !isSpace(line[end])) ++end;
  word = line.substr(0, end);
  size_t next = end;
  while (next < line.size() && isSpace(line[next])) ++next;
  rest = line.substr(next);
}

int parseSlots(const std::string& source, int lineNo, const std::string& host, const std::string& rest) {
  std::string field;
  std::string ignored;
  splitFirstWord(rest, field, ignored);
  const std::string_view prefix = "slots=";
  std::string digits = startsWith(field, prefix) ? field.substr(prefix.size()) : std::string();
  bool allDigits = !digits.empty();
  for (char c : digits) allDigits = allDigits && std::isdigit(static_cast<unsigned char>(c));
  if (!allDigits) {
    throw ParseError(source, lineNo,
                     strCat("expected 'slots=<N>' after host '", host, "', got '", rest, "'"));
  }
  long long slots = 0;
  if (!parseInt(digits, slots) || slots > std::numeric_limits<int>::max()) {
    throw ParseError(source, lineNo, strCat("slot count too large for host '", host, "', got '", field, "'"));
  }
  if (slots <= 0) {
    throw ParseError(source, lineNo, strCat("slots must be positive for host '", host, "', got '", field, "'"));
  }
  return static_cast<int>(slots);
}

}  // namespace

const HostEntry* Hostfile::find(std::string_view name) const {
  for (const auto& entry : entries) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

Hostfile parseHostfile(std::string_view text, const std::string& sourceName) {
  Hostfile hostfile;
  hostfile.source = sourceName;
  const std::vector<std::string> lines = split(text, '\n');
  std::unordered_map<std::string, int> lineOf;  // host -> its line
  for (size_t i = 0; i < lines.size(); ++i) {
    const int lineNo = static_cast<int>(i) + 1;
    const std::string line = trim(lines[i]);
    if (line.empty() || line[0] == '#') continue;
    std::string host;
    std::string rest;
    splitFirstWord(line, host, rest);
    if (rest.empty()) {
      throw ParseError(sourceName, lineNo, strCat("expected '<host> slots=<N>', got '", line, "'"));
    }
    if (host.find('@') != std::string::npos) {
      // dsrun-launch finds its node by hostname in --world_info, so 'user@host' can never match; the user
      // belongs in the ssh configuration (docs/backends.md "Hostfile").
      throw ParseError(sourceName, lineNo,
                       strCat("a host may not carry a user name, got '", host,
                              "'\n  hint: write the host alone and set the user in ~/.ssh/config ('Host ",
                              host.substr(host.find('@') + 1), "' / 'User ", host.substr(0, host.find('@')), "')"));
    }
    const int slots = parseSlots(sourceName, lineNo, host, rest);
    // An index, not find(): a scan per line made 10,000 hosts cost dsrun ~0.2 s before it dialled anything.
    if (const auto [first, added] = lineOf.emplace(host, lineNo); !added) {
      throw ParseError(sourceName, lineNo,
                       strCat("duplicate host '", host, "' (first on line ", first->second, "), got '", line, "'"));
    }
    hostfile.entries.push_back(HostEntry{host, slots, lineNo});
  }
  if (hostfile.entries.empty()) {
    throw ParseError(sourceName, 0, "hostfile has no host lines (expected '<host> slots=<N>')");
  }
  return hostfile;
}

}  // namespace dsrun::launcher
