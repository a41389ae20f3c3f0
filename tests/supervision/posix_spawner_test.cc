#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "common/error.h"
#include "supervision/posix_spawner.h"

using namespace dsrun;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;

namespace {

/// What a finished child did.
struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

/// Reads both pipes to EOF, then reaps the child.
Result finish(Subprocess child) {
  Result result;
  std::string* sinks[2] = {&result.out, &result.err};
  int fds[2] = {child.stdoutFd.get(), child.stderrFd.get()};
  int open = (fds[0] >= 0) + (fds[1] >= 0);
  while (open > 0) {
    pollfd pfds[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    REQUIRE(::poll(pfds, 2, -1) >= 0);
    for (int i = 0; i < 2; ++i) {
      if (pfds[i].revents == 0 || fds[i] < 0) continue;
      char buffer[4096];
      ssize_t n = ::read(fds[i], buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EAGAIN) {
        fds[i] = -1;
        --open;
      }
    }
  }
  REQUIRE(::waitpid(child.pid, &result.status, 0) == child.pid);
  return result;
}

/// Reads one line from a non-blocking pipe (blocking in poll), without its '\n'.
std::string readLine(int fd) {
  std::string line;
  char c = 0;
  while (c != '\n') {
    pollfd pfd{fd, POLLIN, 0};
    REQUIRE(::poll(&pfd, 1, -1) == 1);
    ssize_t n = ::read(fd, &c, 1);
    if (n == 0) break;
    if (n == 1 && c != '\n') line += c;
  }
  return line;
}

Command shell(const std::string& script, std::vector<std::string> args = {}) {
  Command command;
  command.argv = {"/bin/sh", "-c", script, "sh"};
  command.argv.insert(command.argv.end(), args.begin(), args.end());
  command.env = {{"PATH", "/usr/bin:/bin"}};
  return command;
}

Result run(const Command& command, const SpawnOptions& options = {}) {
  PosixSpawner spawner;
  return finish(spawner.spawn(command, options));
}

/// Polls waitpid(WNOHANG) for up to 30 s; fails loudly (and kills the process) if it never ends.
int waitBounded(pid_t pid) {
  for (int i = 0; i < 3000; ++i) {
    int status = 0;
    pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid) return status;
    REQUIRE(got == 0);
    ::usleep(10000);
  }
  ::kill(pid, SIGKILL);
  FAIL("process " << pid << " was still alive after 30 s");
  return -1;
}

/// Makes this test process the subreaper, so orphaned grandchildren come back to it to be reaped.
struct SubreaperGuard {
  SubreaperGuard() { REQUIRE(::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0); }
  ~SubreaperGuard() { ::prctl(PR_SET_CHILD_SUBREAPER, 0); }
};

}  // namespace

TEST_CASE("PosixSpawner reports a failed exec at once with its errno", "[common][local]") {
  std::string dir = "/tmp/dsrun-spawner-test-" + std::to_string(::getpid());
  REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
  std::ofstream(dir + "/not-executable") << "#!/bin/sh\n";
  std::string argv0, path, message;
  std::tie(argv0, path, message) = GENERATE_COPY(table<std::string, std::string, std::string>({
      {"/nonexistent/prog", "/bin", "spawn '/nonexistent/prog': No such file or directory"},
      {"dsrun-no-such-program", "/bin:/usr/bin", "spawn 'dsrun-no-such-program': No such file or directory"},
      {"python3", dir, "spawn 'python3': No such file or directory"},  // only the child's PATH counts
      {dir + "/not-executable", "/bin", "spawn '" + dir + "/not-executable': Permission denied"},
      {"not-executable", dir, "spawn 'not-executable': Permission denied"},
      {dir, "/bin", "spawn '" + dir + "': Permission denied"},
      {"", "/bin", "spawn '': No such file or directory"},
  }));
  Command command;
  command.argv = {argv0, "--flag"};
  command.env = {{"PATH", path}};
  PosixSpawner spawner;
  REQUIRE_THROWS_AS(spawner.spawn(command, {}), IoError);
  REQUIRE_THROWS_WITH(spawner.spawn(command, {}), Equals(message));
  CHECK(::waitpid(-1, nullptr, WNOHANG) == -1);  // the failed child was reaped: no zombie left
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("PosixSpawner reports a bad working directory and bad cores from the child", "[common][local]") {
  Command command = shell("exit 0");
  command.cwd = "/nonexistent/dir";
  PosixSpawner spawner;
  REQUIRE_THROWS_WITH(spawner.spawn(command, {}),
                      Equals("spawn '/bin/sh': chdir '/nonexistent/dir': No such file or directory"));
  command.cwd = "";
  SpawnOptions options;
  options.cores = {4000};
  REQUIRE_THROWS_WITH(spawner.spawn(command, options),
                      Equals("spawn '/bin/sh': sched_setaffinity to cores 4000: Invalid argument"));
}

TEST_CASE("PosixSpawner passes argv and env byte for byte", "[common][local]") {
  std::vector<std::string> words = {"a b",          "\"double\"",   "'single'", "$HOME ${X} `id`", "line1\nline2",
                                    "ü∑ 漢字 🙂", "",             "--flag=x y", "back\\slash",    "*",
                                    "tab\there",    "trailing\n"};
  SECTION("argv, read back from /proc/<pid>/cmdline") {
    Result result = run(shell("cat /proc/$$/cmdline", words));
    std::string expected = std::string("/bin/sh") + '\0' + "-c" + '\0' + "cat /proc/$$/cmdline" + '\0' + "sh" + '\0';
    for (const auto& word : words) expected += word + '\0';
    CHECK(WIFEXITED(result.status));
    CHECK(result.out == expected);
  }
  SECTION("env, read back from /proc/self/environ, is exactly Command::env") {
    Command command;
    command.argv = {"/bin/cat", "/proc/self/environ"};
    std::string expected;
    for (size_t i = 0; i < words.size(); ++i) command.env["V" + std::to_string(i)] = words[i];
    for (const auto& [key, value] : command.env) expected += key + "=" + value + '\0';
    Result result = run(command);
    CHECK(result.out == expected);
  }
  SECTION("cwd") {
    Command command = shell("pwd");
    command.cwd = "/usr";
    CHECK(run(command).out == "/usr\n");
  }
}

TEST_CASE("PosixSpawner makes each child the leader of its own process group", "[common][local]") {
  PosixSpawner spawner;
  Subprocess child = spawner.spawn(shell("cut -d' ' -f5 /proc/$$/stat"), {});
  pid_t pid = child.pid;
  Result result = finish(std::move(child));
  CHECK(result.out == std::to_string(pid) + "\n");
  CHECK(::getpgrp() != pid);
}

TEST_CASE("PosixSpawner::signalGroup reaches the rank's own children", "[common][local]") {
  SubreaperGuard subreaper;
  PosixSpawner spawner;
  Subprocess child = spawner.spawn(shell("sleep 1000 & echo $!; wait"), {});
  pid_t sleeper = std::atoi(readLine(child.stdoutFd.get()).c_str());
  REQUIRE(sleeper > 0);
  spawner.signalGroup(child.pid, SIGTERM);
  int status = waitBounded(child.pid);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  status = waitBounded(sleeper);  // re-parented to this subreaper
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  spawner.signalGroup(child.pid, SIGTERM);  // the group is gone: not an error
}

TEST_CASE("PosixSpawner binds the child to the requested cores", "[common][local]") {
  cpu_set_t allowed;
  REQUIRE(::sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  int last = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) last = cpu;
  }
  REQUIRE(last >= 0);
  SpawnOptions options;
  options.cores = {last};
  Command command;
  command.argv = {"/bin/grep", "Cpus_allowed_list", "/proc/self/status"};
  CHECK(run(command, options).out == "Cpus_allowed_list:\t" + std::to_string(last) + "\n");
  if (CPU_COUNT(&allowed) > 1) {
    CHECK(run(command).out != "Cpus_allowed_list:\t" + std::to_string(last) + "\n");  // unbound by default
  }
}

TEST_CASE("PosixSpawner gives the child default signals, an empty mask and no stray fds", "[common][local]") {
  // Make this process as hostile as dsrun is while it runs: SIGPIPE ignored, a handler, signals blocked.
  struct sigaction ignore {}, handler {}, oldPipe {}, oldUsr2 {};
  ignore.sa_handler = SIG_IGN;
  handler.sa_handler = [](int) {};
  ::sigaction(SIGPIPE, &ignore, &oldPipe);
  ::sigaction(SIGUSR2, &handler, &oldUsr2);
  sigset_t block, oldMask;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  sigaddset(&block, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &block, &oldMask);
  int leaked = ::open("/dev/null", O_RDONLY);  // no O_CLOEXEC on purpose

  Command status;
  status.argv = {"/bin/cat", "/proc/self/status"};
  Result result = run(status);
  Result fds = run(shell("ls /proc/$$/fd"));

  ::close(leaked);
  ::pthread_sigmask(SIG_SETMASK, &oldMask, nullptr);
  ::sigaction(SIGPIPE, &oldPipe, nullptr);
  ::sigaction(SIGUSR2, &oldUsr2, nullptr);
  CHECK_THAT(result.out, Contains("SigBlk:\t0000000000000000"));
  CHECK_THAT(result.out, Contains("SigIgn:\t0000000000000000"));
  CHECK_THAT(result.out, Contains("SigCgt:\t0000000000000000"));
  CHECK(fds.out == "0\n1\n2\n");
}

TEST_CASE("PosixSpawner writes both streams to one file in OutputMode::File", "[common][local]") {
  char path[] = "/tmp/dsrun-spawner-log-XXXXXX";
  int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  SpawnOptions options;
  options.output = OutputMode::File;
  options.outputFd = fd;
  PosixSpawner spawner;
  Subprocess child = spawner.spawn(shell("echo out; echo err >&2; echo out2"), options);
  ::close(fd);
  CHECK_FALSE(child.stdoutFd.valid());
  CHECK_FALSE(child.stderrFd.valid());
  Result result = finish(std::move(child));
  CHECK(WEXITSTATUS(result.status) == 0);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "out\nerr\nout2\n");
  ::unlink(path);
}

TEST_CASE("PosixSpawner can give the child /dev/null as stdin", "[common][local]") {
  Command command;
  command.argv = {"/bin/readlink", "/proc/self/fd/0"};
  SpawnOptions options;
  options.stdinNull = true;
  CHECK(run(command, options).out == "/dev/null\n");
}

TEST_CASE("PosixSpawner children die with the process that spawned them (PDEATHSIG)", "[common][local]") {
  SubreaperGuard subreaper;  // the orphan comes back here, so its cause of death can be read
  int report[2];
  REQUIRE(::pipe(report) == 0);
  pid_t launcher = ::fork();
  REQUIRE(launcher >= 0);
  if (launcher == 0) {
    // Stands in for dsrun: spawns a long sleeper, says its pid, then is SIGKILLed without cleanup.
    PosixSpawner spawner;
    Command command;
    command.argv = {"/bin/sleep", "1000"};
    Subprocess child = spawner.spawn(command, {});
    ssize_t ignored = ::write(report[1], &child.pid, sizeof child.pid);
    (void)ignored;
    ::raise(SIGKILL);
  }
  ::close(report[1]);
  pid_t sleeper = -1;
  REQUIRE(::read(report[0], &sleeper, sizeof sleeper) == sizeof sleeper);
  ::close(report[0]);
  int status = waitBounded(launcher);
  CHECK(WTERMSIG(status) == SIGKILL);
  status = waitBounded(sleeper);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
}
