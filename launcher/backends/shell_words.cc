#include "launcher/backends/shell_words.h"

#include "common/error.h"
#include "common/strings.h"

namespace dsrun::launcher {

namespace {

bool isBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::vector<std::string> shellSplit(std::string_view text, const std::string& source) {
  std::vector<std::string> words;
  std::string word;
  bool inWord = false;
  const auto fail = [&](const char* what) {
    throw ParseError(source, 0, strCat(what, ", got '", text, "'"));
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (isBlank(c)) {
      if (inWord) words.push_back(std::move(word));
      word.clear();
      inWord = false;
      continue;
    }
    inWord = true;
    if (c == '\\') {
      if (++i == text.size()) fail("no escaped character");
      word += text[i];
    } else if (c == '\'') {
      const size_t close = text.find('\'', i + 1);
      if (close == std::string_view::npos) fail("no closing quotation");
      word.append(text.substr(i + 1, close - i - 1));
      i = close;
    } else if (c == '"') {
      for (++i;; ++i) {
        if (i >= text.size()) fail("no closing quotation");
        if (text[i] == '"') break;
        // Inside double quotes shlex lets a backslash escape only '\\' and '"'.
        if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == '\\' || text[i + 1] == '"')) ++i;
        word += text[i];
      }
    } else {
      word += c;
    }
  }
  if (inWord) words.push_back(std::move(word));
  return words;
}

std::string escapePdshPercent(std::string_view word) {
  std::string out;
  out.reserve(word.size());
  for (char c : word) {
    out += c;
    if (c == '%') out += '%';
  }
  return out;
}

}  // namespace dsrun::launcher
