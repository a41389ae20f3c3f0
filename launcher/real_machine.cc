#include "launcher/real_machine.h"

#include <dirent.h>
#include <netdb.h>
#include <fcntl.h>
#include <pwd.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "common/error.h"
#include "common/strings.h"
#include "common/port_check.h"
#include "launcher/backends/ssh_check.h"

extern char** environ;

namespace dsrun::launcher {

namespace {

bool isAllDigits(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

std::vector<std::string> listDir(const std::string& path) {
  std::vector<std::string> names;
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return names;
  while (dirent* entry = readdir(dir)) names.emplace_back(entry->d_name);
  closedir(dir);
  return names;
}

std::string readSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return trim(text.str());
}

}  // namespace

RealMachine::RealMachine() {
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string item(*entry);
    const size_t eq = item.find('=');
    if (eq != std::string::npos) env_.emplace(item.substr(0, eq), item.substr(eq + 1));
  }
  char buffer[PATH_MAX];
  if (getcwd(buffer, sizeof buffer) == nullptr) {
    throw IoError("", "getcwd", errno, "finding the launch directory");
  }
  cwd_ = buffer;
}

std::optional<std::string> RealMachine::readFile(const std::string& path) const {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    throw IoError(path, "open", errno, "reading the file");
  }
  struct stat info {};
  if (fstat(fd, &info) == 0 && S_ISDIR(info.st_mode)) {
    close(fd);
    throw IoError(path, "read", EISDIR, "reading the file");
  }
  std::string text;
  char buffer[65536];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      throw IoError(path, "read", err, "reading the file");
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return text;
}

std::string RealMachine::homeDir() const {
  auto it = env_.find("HOME");
  if (it != env_.end() && !it->second.empty()) return it->second;
  const passwd* entry = getpwuid(getuid());
  return entry != nullptr && entry->pw_dir != nullptr ? entry->pw_dir : "/";
}

int RealMachine::gpuCount() const {
  int count = 0;
  for (const std::string& name : listDir("/dev")) {
    if (startsWith(name, "nvidia") && isAllDigits(name.substr(6))) ++count;
  }
  return count;
}

int RealMachine::physicalCoreCount() const {
  // psutil counts distinct sibling sets (core_cpus_list, or thread_siblings_list on older kernels).
  std::set<std::string> cores;
  for (const std::string& name : listDir("/sys/devices/system/cpu")) {
    if (!startsWith(name, "cpu") || !isAllDigits(name.substr(3))) continue;
    const std::string topology = "/sys/devices/system/cpu/" + name + "/topology/";
    std::string siblings = readSmallFile(topology + "core_cpus_list");
    if (siblings.empty()) siblings = readSmallFile(topology + "thread_siblings_list");
    if (!siblings.empty()) cores.insert(siblings);
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

std::string RealMachine::resolveMasterAddr(const std::string& host, const std::vector<std::string>& sshOptions) {
  // BatchMode: never sit at a password prompt; DeepSpeed would hang there.
  std::vector<std::string> argv = {"ssh", "-o", "BatchMode=yes"};
  argv.insert(argv.end(), sshOptions.begin(), sshOptions.end());
  for (const std::string& word : {host, std::string("hostname"), std::string("-I")}) argv.push_back(word);
  const std::string shown = strCat("'", join(argv, " "), "'");
  const std::string hint = "\n  hint: pass --master_addr ADDR (the address of the first host)";

  int pipeFds[2];
  if (pipe2(pipeFds, O_CLOEXEC) != 0) throw IoError("", "pipe", errno, "running " + shown);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], STDOUT_FILENO);
  std::vector<char*> cargv;
  for (auto& word : argv) cargv.push_back(word.data());
  cargv.push_back(nullptr);
  pid_t child = -1;
  const int spawnErr = posix_spawnp(&child, "ssh", &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipeFds[1]);
  if (spawnErr != 0) {
    close(pipeFds[0]);
    throw Error(strCat("cannot infer the master address: spawn 'ssh': ", std::strerror(spawnErr), hint));
  }
  std::string output;
  char buffer[4096];
  while (true) {
    const ssize_t n = read(pipeFds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buffer, static_cast<size_t>(n));
  }
  close(pipeFds[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw Error(strCat("cannot infer the master address: ", shown, " failed (",
                       WIFEXITED(status) ? strCat("exit code ", WEXITSTATUS(status))
                                         : strCat("signal ", WTERMSIG(status)),
                       ")", hint));
  }
  std::istringstream words(output);
  std::string first;
  words >> first;
  if (first.empty()) {
    throw Error(strCat("cannot infer the master address: ", shown, " printed no address", hint));
  }
  return first;
}

namespace {

/// getaddrinfo(3)'s complaint about NAME, or nothing when it resolves.
std::optional<std::string> resolveError(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(name.c_str(), nullptr, &hints, &found);
  if (rc == 0) {
    ::freeaddrinfo(found);
    return std::nullopt;
  }
  return rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc);
}

}  // namespace

std::optional<std::string> RealMachine::hostLookupError(const std::string& host, bool viaSsh,
                                                        const std::vector<std::string>& sshOptions) {
  // The name as written first: one resolver call per host, where `ssh -G` is a process per host (seconds on a
  // thousand-node hostfile). Only a name the resolver does not know is looked up in ssh's configuration, where
  // a `Host` alias may map it to a real one.
  std::optional<std::string> why = resolveError(host);
  if (!why || !viaSsh) return why;
  std::string name = host;
  // `ssh -G` prints the configuration it would use, "hostname NAME" among it, and connects to nothing.
  std::vector<std::string> argv = {"ssh", "-G"};
  argv.insert(argv.end(), sshOptions.begin(), sshOptions.end());
  argv.push_back(host);
  try {
    const CapturedRun run = runCaptured(Command{argv, env_, ""});
    if (WIFEXITED(run.waitStatus) && WEXITSTATUS(run.waitStatus) == 0) {
      for (const std::string& line : split(run.output, '\n')) {
        if (startsWith(line, "hostname ")) name = trim(line.substr(9));
      }
    }
  } catch (const IoError&) {
    // No OpenSSH client here: the backend's own check will say so; the name as written stays unresolved.
  }
  if (name == host) return why;
  why = resolveError(name);
  if (!why) return std::nullopt;
  return strCat(*why, " (ssh configuration maps it to '", name, "')");
}

int RealMachine::pid() const { return static_cast<int>(getpid()); }

void RealMachine::checkPortBindable(int port) { dsrun::checkPortBindable(port); }

int RealMachine::pickFreePort() { return dsrun::pickFreePort(); }

}  // namespace dsrun::launcher
