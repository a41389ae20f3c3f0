#include "tls/redact.h"

#include <algorithm>
#include <cctype>

namespace dsrun::tls {
namespace {

constexpr std::string_view kSecretWords[] = {"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"};

std::string upper(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::toupper(c); });
  return out;
}

bool isIdentifier(std::string_view name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

}  // namespace

bool isSecretName(std::string_view name) {
  const std::string up = upper(name);
  return std::any_of(std::begin(kSecretWords), std::end(kSecretWords),
                     [&](std::string_view word) { return up.find(word) != std::string::npos; });
}

std::map<std::string, std::string> redactEnv(const std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> out = env;
  for (auto& [name, value] : out) {
    if (isSecretName(name)) value = kRedacted;
  }
  return out;
}

std::string redactAssignment(std::string_view assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string_view::npos) return std::string(assignment);
  const std::string_view name = assignment.substr(0, eq);
  if (!isSecretName(name)) return std::string(assignment);
  return std::string(name) + "=" + kRedacted;
}

std::vector<std::string> redactArgv(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  bool redactNext = false;
  for (const auto& word : argv) {
    if (redactNext) {
      out.push_back(kRedacted);
      redactNext = false;
      continue;
    }
    std::string_view w = word;
    const bool isFlag = w.size() > 1 && w[0] == '-';
    std::string_view body = w;
    while (!body.empty() && body.front() == '-') body.remove_prefix(1);
    const size_t eq = body.find('=');
    const std::string_view name = body.substr(0, eq);
    if (eq != std::string_view::npos && (isFlag || isIdentifier(name)) && isSecretName(name)) {
      out.push_back(word.substr(0, word.size() - (body.size() - eq) + 1) + kRedacted);
    } else if (isFlag && eq == std::string_view::npos && isSecretName(name)) {
      out.push_back(word);
      redactNext = true;
    } else {
      out.push_back(word);
    }
  }
  return out;
}

}  // namespace dsrun::tls
