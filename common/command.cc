#include "common/command.h"

#include "common/strings.h"

namespace dsrun {

std::string Command::toShellString() const {
  std::vector<std::string> words;
  words.reserve(argv.size());
  for (const auto& word : argv) words.push_back(shellQuote(word));
  return join(words, " ");
}

bool operator==(const Command& a, const Command& b) {
  return a.argv == b.argv && a.env == b.env && a.cwd == b.cwd;
}

}  // namespace dsrun
