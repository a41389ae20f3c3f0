#include "supervision/posix_spawner.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "common/error.h"
#include "common/logging.h"
#include "common/strings.h"

namespace dsrun {
namespace {

/// What the child was doing when it failed; sent back over the status pipe with errno.
enum class Stage : int { Setpgid, Pdeathsig, Stdio, Chdir, Affinity, Exec };

struct ChildFailure {
  Stage stage;
  int err;
};

/// Everything the child needs, built before fork: after fork the child may not allocate.
struct ExecPlan {
  std::vector<std::string> candidates;  ///< full paths to try with execve, in PATH order
  std::vector<std::string> envStrings;  ///< "KEY=VALUE" storage behind envp
  std::vector<char*> argv;              ///< null-terminated, points into the Command
  std::vector<char*> envp;              ///< null-terminated, points into envStrings
};

ExecPlan makePlan(const Command& command) {
  ExecPlan plan;
  const std::string& file = command.argv.front();
  if (file.find('/') != std::string::npos) {
    plan.candidates.push_back(file);
  } else if (!file.empty()) {
    // Like Python's subprocess (what DeepSpeed uses): the child's PATH decides, not ours.
    auto it = command.env.find("PATH");
    std::string path = it != command.env.end() ? it->second : "/bin:/usr/bin";
    for (const auto& dir : split(path, ':')) plan.candidates.push_back((dir.empty() ? "." : dir) + "/" + file);
  }
  for (const auto& word : command.argv) plan.argv.push_back(const_cast<char*>(word.c_str()));
  plan.argv.push_back(nullptr);
  for (const auto& [key, value] : command.env) plan.envStrings.push_back(key + "=" + value);
  for (auto& entry : plan.envStrings) plan.envp.push_back(entry.data());
  plan.envp.push_back(nullptr);
  return plan;
}

/// Moves `fd` above the standard descriptors, so dup2 onto 0-2 in the child cannot clobber it.
int aboveStdio(int fd) {
  if (fd > STDERR_FILENO) return fd;
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  ::close(fd);
  return moved;
}

void makePipe(UniqueFd& readEnd, UniqueFd& writeEnd, const std::string& argv0) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw IoError("", "pipe2", errno, strCat("spawning '", argv0, "'"));
  readEnd.reset(aboveStdio(fds[0]));
  writeEnd.reset(aboveStdio(fds[1]));
  if (!readEnd.valid() || !writeEnd.valid()) throw IoError("", "fcntl", errno, strCat("spawning '", argv0, "'"));
}

[[noreturn]] void failChild(int statusFd, Stage stage) {
  ChildFailure failure{stage, errno};
  ssize_t ignored = ::write(statusFd, &failure, sizeof failure);
  (void)ignored;
  ::_exit(127);
}

void resetSignals() {
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) != 0) continue;
    bool handled = (current.sa_flags & SA_SIGINFO) != 0 ||
                   (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN);
    if (handled || sig == SIGPIPE || sig == SIGXFSZ) {
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      ::sigaction(sig, &dfl, nullptr);
    }
  }
}

/// dup2 that also works when fd == target (then only FD_CLOEXEC must be cleared).
bool moveFd(int fd, int target) {
  if (fd == target) return ::fcntl(target, F_SETFD, 0) == 0;
  return ::dup2(fd, target) == target;
}

void closeOtherFds() {
  // CLOSE_RANGE_CLOEXEC (Linux 5.11) keeps the status pipe open until exec; the loop is the fallback.
  if (::syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) == 0) return;
  long limit = std::min(::sysconf(_SC_OPEN_MAX), 65536L);
  for (int fd = 3; fd < limit; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
}

[[noreturn]] void runChild(const Command& command, const SpawnOptions& options, const ExecPlan& plan,
                           cpu_set_t* cpus, size_t cpusSize, int stdoutW, int stderrW, int statusW,
                           pid_t parent) {
  // Handlers go back to default before the mask is lifted, so a pending signal cannot run dsrun's
  // handler (which writes to dsrun's self-pipe) in the child.
  resetSignals();
  if (options.ownProcessGroup && ::setpgid(0, 0) != 0) failChild(statusW, Stage::Setpgid);
  if (options.dieWithParent) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) failChild(statusW, Stage::Pdeathsig);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
  }
  if (options.stdinNull) {
    int null = ::open("/dev/null", O_RDONLY);
    if (null < 0 || !moveFd(null, STDIN_FILENO)) failChild(statusW, Stage::Stdio);
  }
  if (options.output == OutputMode::Pipe) {
    if (!moveFd(stdoutW, STDOUT_FILENO) || !moveFd(stderrW, STDERR_FILENO)) failChild(statusW, Stage::Stdio);
  } else if (options.output == OutputMode::File) {
    if (!moveFd(stdoutW, STDOUT_FILENO) || ::dup2(STDOUT_FILENO, STDERR_FILENO) != STDERR_FILENO) {
      failChild(statusW, Stage::Stdio);
    }
  }
  closeOtherFds();
  if (!command.cwd.empty() && ::chdir(command.cwd.c_str()) != 0) failChild(statusW, Stage::Chdir);
  if (cpus != nullptr && ::sched_setaffinity(0, cpusSize, cpus) != 0) failChild(statusW, Stage::Affinity);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  int err = ENOENT;
  bool sawAccess = false;
  for (const auto& path : plan.candidates) {
    ::execve(path.c_str(), plan.argv.data(), plan.envp.data());
    err = errno;
    if (err == EACCES) sawAccess = true;
    if (err != ENOENT && err != ENOTDIR && err != EACCES) break;  // execvp's rule: stop on real errors
  }
  errno = (sawAccess && (err == ENOENT || err == ENOTDIR)) ? EACCES : err;
  failChild(statusW, Stage::Exec);
}

std::string describeFailure(const Command& command, const SpawnOptions& options, Stage stage) {
  std::string what = strCat("spawn '", command.argv.front(), "'");
  switch (stage) {
    case Stage::Setpgid: return what + ": setpgid";
    case Stage::Pdeathsig: return what + ": prctl(PR_SET_PDEATHSIG)";
    case Stage::Stdio: return what + ": redirecting stdio";
    case Stage::Chdir: return strCat(what, ": chdir '", command.cwd, "'");
    case Stage::Affinity: {
      std::vector<std::string> ids;
      for (int core : options.cores) ids.push_back(std::to_string(core));
      return strCat(what, ": sched_setaffinity to cores ", join(ids, ","));
    }
    case Stage::Exec: return what;
  }
  return what;
}

}  // namespace

Subprocess PosixSpawner::spawn(const Command& command, const SpawnOptions& options) {
  DSRUN_CHECK(!command.argv.empty(), "spawn needs a non-empty argv");
  DSRUN_CHECK(options.output != OutputMode::File || options.outputFd >= 0, "OutputMode::File needs outputFd");
  const std::string& argv0 = command.argv.front();
  ExecPlan plan = makePlan(command);

  std::unique_ptr<cpu_set_t, void (*)(cpu_set_t*)> cpus(nullptr, [](cpu_set_t* set) { CPU_FREE(set); });
  size_t cpusSize = 0;
  if (!options.cores.empty()) {
    int maxCore = *std::max_element(options.cores.begin(), options.cores.end());
    DSRUN_CHECK(*std::min_element(options.cores.begin(), options.cores.end()) >= 0, "negative core id");
    cpus.reset(CPU_ALLOC(maxCore + 1));
    cpusSize = CPU_ALLOC_SIZE(maxCore + 1);
    CPU_ZERO_S(cpusSize, cpus.get());
    for (int core : options.cores) CPU_SET_S(core, cpusSize, cpus.get());
  }

  UniqueFd statusR, statusW, outR, outW, errR, errW;
  makePipe(statusR, statusW, argv0);
  if (options.output == OutputMode::Pipe) {
    makePipe(outR, outW, argv0);
    makePipe(errR, errW, argv0);
  } else if (options.output == OutputMode::File) {
    outW.reset(::fcntl(options.outputFd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1));
    if (!outW.valid()) throw IoError("", "fcntl", errno, strCat("spawning '", argv0, "'"));
  }

  // Signals stay blocked across fork so the child cannot run dsrun's handlers before resetting them.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    runChild(command, options, plan, cpus.get(), cpusSize, outW.get(), errW.get(), statusW.get(), parent);
  }
  int forkErr = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) throw IoError("", "fork", forkErr, strCat("spawning '", argv0, "'"));

  statusW.reset();
  outW.reset();
  errW.reset();
  ChildFailure failure{};
  ssize_t n;
  do {
    n = ::read(statusR.get(), &failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw IoError("", describeFailure(command, options, failure.stage), failure.err, "");
  }
  for (const UniqueFd* fd : {&outR, &errR}) {
    if (fd->valid()) ::fcntl(fd->get(), F_SETFL, ::fcntl(fd->get(), F_GETFL) | O_NONBLOCK);
  }
  Subprocess child;
  child.pid = pid;
  child.stdoutFd = std::move(outR);
  child.stderrFd = std::move(errR);
  return child;
}

void PosixSpawner::signalGroup(pid_t pgid, int signal) {
  DSRUN_CHECK(pgid > 1, "refusing to signal process group ", pgid);
  if (::kill(-pgid, signal) != 0 && errno != ESRCH) {
    DSRUN_LOG(WARN) << "kill(-" << pgid << ", " << signal << "): " << std::strerror(errno);
  }
}

}  // namespace dsrun
