#include "launcher/backends/ssh/ssh_config_lookup.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "common/strings.h"

namespace dsrun::launcher {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::string word;
  for (char c : line) {
    if (c == ' ' || c == '\t' || c == '=') {
      if (!word.empty()) out.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) out.push_back(word);
  return out;
}

bool hostMatches(const std::vector<std::string>& patterns, const std::string& host) {
  bool matched = false;
  for (const std::string& p : patterns) {
    const bool negated = startsWith(p, "!");
    const std::string pattern = negated ? p.substr(1) : p;
    if (::fnmatch(lower(pattern).c_str(), lower(host).c_str(), 0) != 0) continue;
    if (negated) return false;
    matched = true;
  }
  return matched;
}

}  // namespace

std::optional<std::string> sshConfigValue(std::string_view text, const std::string& host, const std::string& keyword) {
  bool active = true;  // lines before the first Host apply to every host
  for (const std::string& raw : split(text, '\n')) {
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> w = words(line);
    if (w.empty()) continue;
    const std::string key = lower(w[0]);
    if (key == "host") {
      active = hostMatches(std::vector<std::string>(w.begin() + 1, w.end()), host);
    } else if (key == "match") {
      active = false;
    } else if (active && key == lower(keyword) && w.size() > 1) {
      return w[1];
    }
  }
  return std::nullopt;
}

}  // namespace dsrun::launcher
