#pragma once
// DeepSpeed's passwordless-ssh check before a pdsh/ssh launch (`ssh -o PasswordAuthentication=no
// [-p PORT] FIRST_HOST hostname`), made with the ssh options the backend itself uses, and with a message
// that says what to fix. Also the OpenSSH options MASTER_ADDR inference (`ssh HOST hostname -I`) must use.

#include <functional>
#include <string>
#include <vector>

#include "common/command.h"
#include "launcher/environment.h"
#include "launcher/options.h"

namespace dsrun::launcher {

/// The OpenSSH client options of the backend `options.launcher` selects: pdsh: the words of
/// PDSH_SSH_ARGS_APPEND in `env` (pdsh appends them to its ssh command) plus `-p PORT` for --ssh_port;
/// ssh: `-F FILE` for --ssh_config plus `-p PORT`; others: `-p PORT` only.
std::vector<std::string> sshOptionsFor(const Options& options, const EnvMap& env);

/// ssh -o PasswordAuthentication=no -o BatchMode=yes OPTIONS HOST hostname, with `env` as its environment.
Command sshCheckCommand(const std::string& host, const std::vector<std::string>& sshOptions, const EnvMap& env);

/// A finished command: its wait status and its stdout+stderr.
struct CapturedRun {
  int waitStatus = 0;
  std::string output;
};
using CommandRunner = std::function<CapturedRun(const Command&)>;

/// Runs `command` to completion with stdin from /dev/null, capturing stdout and stderr (real runner).
/// Throws IoError if it cannot be spawned.
CapturedRun runCaptured(const Command& command);

/// Runs the check for `host` with `run`; throws Error "passwordless ssh to 'HOST' failed: ..." with a
/// hint naming the settings to fix (`settingsName`, e.g. "PDSH_SSH_ARGS_APPEND") and --no_ssh_check, and the
/// hostfile that named `host` (empty: there is none, the job is local mode sent through ssh by --force_multi).
void checkPasswordlessSsh(const std::string& host, const Command& check, const std::string& hostfile,
                          const std::string& settingsName, const CommandRunner& run);

}  // namespace dsrun::launcher
