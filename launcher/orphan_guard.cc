#include "launcher/orphan_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "common/error.h"

namespace dsrun::launcher {

namespace {

constexpr char kGoodbye = 'x';

}  // namespace

OrphanGuard::OrphanGuard(const Command& command) {
  // Everything the child needs is built before fork(): after it, only async-signal-safe calls.
  std::vector<std::string> envText;
  for (const auto& [name, value] : command.env) envText.push_back(name + "=" + value);
  std::vector<char*> argv, envp;
  for (const std::string& word : command.argv) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  for (const std::string& entry : envText) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  const char* cwd = command.cwd.empty() ? nullptr : command.cwd.c_str();

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw IoError("", "pipe2", errno, "setting up the orphan guard");
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw IoError("", "fork", err, "starting the orphan guard");
  }
  if (pid == 0) {
    ::close(fds[1]);
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::signal(s, SIG_IGN);
    char byte = 0;
    ssize_t n;
    while ((n = ::read(fds[0], &byte, 1)) < 0 && errno == EINTR) {
    }
    if (n == 1 && byte == kGoodbye) ::_exit(0);
    // dsrun is gone: stop what it left behind, with the default dispositions back for the command.
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::signal(s, SIG_DFL);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    if (cwd != nullptr && ::chdir(cwd) != 0) ::_exit(127);
    ::execvpe(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(fds[0]);
  pid_ = pid;
  writeFd_ = fds[1];
}

void OrphanGuard::disarm() {
  if (writeFd_ < 0) return;
  const char byte = kGoodbye;
  while (::write(writeFd_, &byte, 1) < 0 && errno == EINTR) {
  }
  ::close(writeFd_);
  writeFd_ = -1;
}

OrphanGuard::~OrphanGuard() {
  disarm();
  if (pid_ > 0) {
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

}  // namespace dsrun::launcher
