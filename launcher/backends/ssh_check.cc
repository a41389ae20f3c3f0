#include "launcher/backends/ssh_check.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "common/error.h"
#include "common/exit_status.h"
#include "supervision/posix_spawner.h"
#include "common/strings.h"
#include "launcher/backends/shell_words.h"

namespace dsrun::launcher {

std::vector<std::string> sshOptionsFor(const Options& options, const EnvMap& env) {
  std::vector<std::string> words;
  if (options.launcher == "pdsh") {
    auto it = env.find("PDSH_SSH_ARGS_APPEND");
    if (it != env.end()) words = shellSplit(it->second, "PDSH_SSH_ARGS_APPEND");
  } else if (options.launcher == "ssh" && !options.sshConfig.empty()) {
    words = {"-F", options.sshConfig};
  }
  if (options.sshPort) {
    words.push_back("-p");
    words.push_back(std::to_string(*options.sshPort));
  }
  return words;
}

Command sshCheckCommand(const std::string& host, const std::vector<std::string>& sshOptions, const EnvMap& env) {
  Command c;
  c.argv = {"ssh", "-o", "PasswordAuthentication=no", "-o", "BatchMode=yes"};
  c.argv.insert(c.argv.end(), sshOptions.begin(), sshOptions.end());
  c.argv.push_back(host);
  c.argv.push_back("hostname");
  c.env = env;
  return c;
}

CapturedRun runCaptured(const Command& command) {
  PosixSpawner spawner;
  SpawnOptions options;
  options.stdinNull = true;
  Subprocess child = spawner.spawn(command, options);
  CapturedRun result;
  std::vector<pollfd> fds = {{child.stdoutFd.get(), POLLIN, 0}, {child.stderrFd.get(), POLLIN, 0}};
  int open = 2;
  while (open > 0) {
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) break;
    for (pollfd& fd : fds) {
      if (fd.fd < 0 || fd.revents == 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fd.fd, buffer, sizeof buffer);
      if (n > 0) {
        result.output.append(buffer, static_cast<size_t>(n));
      } else if (!(n < 0 && (errno == EAGAIN || errno == EINTR))) {
        fd.fd = -1;
        --open;
      }
    }
  }
  while (::waitpid(child.pid, &result.waitStatus, 0) < 0 && errno == EINTR) {
  }
  return result;
}

void checkPasswordlessSsh(const std::string& host, const Command& check, const std::string& hostfile,
                          const std::string& settingsName, const CommandRunner& run) {
  CapturedRun result;
  try {
    result = run(check);
  } catch (const IoError& e) {
    throw Error(strCat("passwordless ssh check of '", host, "' could not run: ", e.what(),
                       "\n  hint: install an OpenSSH client, or skip the check with --no_ssh_check"));
  }
  if (!isFailure(result.waitStatus)) return;
  std::vector<std::string> lines = split(trim(result.output), '\n');
  const std::string said = lines.empty() || lines.back().empty() ? "" : strCat(": ", trim(lines.back()));
  throw Error(strCat("passwordless ssh to '", host, "' failed: '", join(check.argv, " "), "' ",
                     describeWaitStatus(result.waitStatus), said,
                     "\n  hint: host '", host, "' ", hostfile.empty() ? "(local mode: no hostfile)" : "of " + hostfile,
                     " must accept key-based ssh without a password (ssh-copy-id ", host, ", known_hosts entry); "
                     "set ssh options in ", settingsName, "; ",
                     // Without a hostfile only --force_multi sends the job through ssh.
                     hostfile.empty() ? "to run on this machine drop --force_multi" : "for a single node remove the hostfile",
                     "; or skip this check with --no_ssh_check"));
}

}  // namespace dsrun::launcher
