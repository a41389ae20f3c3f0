#pragma once
// sshConfigValue: the value OpenSSH's client would use for one keyword of an ssh_config for one host
// (Host blocks with *, ? and ! patterns; the first value found wins). libssh 0.10 applies most keywords
// itself (ssh_options_parse_config) but offers no way to read StrictHostKeyChecking back, which the ssh
// backend needs to decide about unknown host keys.

#include <optional>
#include <string>
#include <string_view>

namespace dsrun::launcher {

/// The value of `keyword` (case-insensitive) for `host` in config `text`, or nullopt. `Match` blocks are
/// skipped (not evaluated); `Include` is not followed.
std::optional<std::string> sshConfigValue(std::string_view text, const std::string& host, const std::string& keyword);

}  // namespace dsrun::launcher
