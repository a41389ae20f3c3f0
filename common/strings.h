#pragma once
// Small string helpers shared by the launcher and the agent (std only).

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace dsrun {

/// Concatenates anything with operator<< into one string (gloo's MakeString).
template <typename... Args>
std::string strCat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

/// Splits on every occurrence of `sep`; keeps empty fields ("a,,b" -> {"a", "", "b"}).
std::vector<std::string> split(std::string_view text, char sep);

/// Removes leading and trailing ASCII whitespace.
std::string trim(std::string_view text);

/// Joins with `sep` between items.
std::string join(const std::vector<std::string>& items, std::string_view sep);

bool startsWith(std::string_view text, std::string_view prefix);
bool endsWith(std::string_view text, std::string_view suffix);

/// Quotes one word for a POSIX shell so it arrives byte for byte ('...' with '\'' for quotes).
/// Words made only of safe characters are returned unchanged.
std::string shellQuote(std::string_view word);

/// Parses a whole base-10 int; returns false on empty input, junk or overflow.
bool parseInt(std::string_view text, long long& out);

}  // namespace dsrun
