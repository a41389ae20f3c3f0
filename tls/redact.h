#pragma once
// Keeping secrets out of logs: environment values whose name looks like a credential are replaced
// before anything that prints an environment or an argv.

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dsrun::tls {

/// Replacement text for a secret value.
inline constexpr const char* kRedacted = "<redacted>";

/// True if an environment variable called `name` may hold a secret: its upper-cased name contains
/// TOKEN, KEY, SECRET, PASSWORD (also PASSWD, CREDENTIAL, AUTH).
bool isSecretName(std::string_view name);

/// A copy of `env` with every secret value replaced by kRedacted.
std::map<std::string, std::string> redactEnv(const std::map<std::string, std::string>& env);

/// `NAME=value` rendered for a log, redacting the value if NAME is secret.
std::string redactAssignment(std::string_view assignment);

/// A copy of `argv` where every word of the form NAME=value with a secret NAME (as `env` or a shell
/// prefix would pass it) and every word after a flag named like a secret (`--api_key VALUE`,
/// `--token=VALUE`) is redacted.
std::vector<std::string> redactArgv(const std::vector<std::string>& argv);

}  // namespace dsrun::tls
