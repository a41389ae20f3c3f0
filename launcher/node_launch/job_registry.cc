#include "launcher/node_launch/job_registry.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "common/env_contract.h"
#include "common/error.h"
#include "supervision/process_state.h"
#include "common/strings.h"

namespace dsrun::launcher {

std::string thisHostName() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

namespace {

/// After the final SIGKILL, how long the job's processes may take to die before they are named (state D): as
/// runLocalJob's.
constexpr double kKillWaitS = 10;

/// The value of `name` in /proc/<pid>/environ, or "".
std::string environValue(pid_t pid, const std::string& name) {
  std::ifstream in(strCat("/proc/", pid, "/environ"), std::ios::binary);
  std::string entry;
  while (std::getline(in, entry, '\0')) {
    if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 && entry[name.size()] == '=') {
      return entry.substr(name.size() + 1);
    }
  }
  return "";
}

/// Names every process of the job still alive kKillWaitS after the final SIGKILL, on stderr.
void reportSurvivors(const std::string& jobId) {
  // A process in uninterruptible sleep (state D) outlives SIGKILL until the kernel lets go: name each one still
  // there after a bounded wait, with its rank and state, rather than leave the reader guessing.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kKillWaitS);
  std::vector<pid_t> left = processesOfJob(jobId, ::getpid());
  while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    left = processesOfJob(jobId, ::getpid());
  }
  for (pid_t pid : left) {
    const std::string state = processState(pid);
    if (state.empty() || state[0] == 'Z') continue;  // gone meanwhile, or dead and waiting for its parent
    const std::string rank = environValue(pid, kEnvRank);
    std::cerr << "dsrun: " << (rank.empty() ? std::string("process") : strCat("rank ", rank)) << " (" << thisHostName()
              << " pid " << pid << ") is still alive " << kKillWaitS << "s after SIGKILL, in state " << state
              << "; giving up on it" << std::endl;
  }
}

std::vector<std::string> listDir(const std::string& path) {
  std::vector<std::string> names;
  if (DIR* dir = ::opendir(path.c_str())) {
    while (dirent* entry = ::readdir(dir)) names.emplace_back(entry->d_name);
    ::closedir(dir);
  }
  return names;
}

bool allDigits(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// "uts:[4026531838]": which hostname namespace a process is in (empty if unreadable).
std::string utsNamespace(const std::string& pid) {
  char link[64];
  const ssize_t n = ::readlink(strCat("/proc/", pid, "/ns/uts").c_str(), link, sizeof link - 1);
  return n > 0 ? std::string(link, static_cast<size_t>(n)) : std::string();
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// Pids recorded by the job's dsrun-launch processes on this host that still run dsrun-launch. Only this
// host's: /tmp may be shared (the test cluster shares /tmp and pids), and a launcher signalled once per
// host's kill command would take the second SIGTERM as "no more grace".
std::vector<pid_t> registeredLaunchers(const std::string& dir) {
  std::vector<pid_t> pids;
  const std::string prefix = strCat("launch-", thisHostName(), "-");
  for (const std::string& name : listDir(dir)) {
    if (!startsWith(name, prefix) || !endsWith(name, ".pid")) continue;
    long long pid = 0;
    if (!parseInt(trim(readAll(dir + "/" + name)), pid) || pid <= 1) continue;
    // The pid may have been reused: only a dsrun-launch process counts.
    char exe[4096];
    const ssize_t n = ::readlink(strCat("/proc/", pid, "/exe").c_str(), exe, sizeof exe - 1);
    if (n > 0 && endsWith(std::string(exe, static_cast<size_t>(n)), "dsrun-launch")) {
      pids.push_back(static_cast<pid_t>(pid));
    }
  }
  return pids;
}

}  // namespace

std::string jobDir(const std::string& jobId) {
  if (jobId.empty() || jobId.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
                           std::string::npos || jobId[0] == '.') {
    throw ConfigError(strCat("--job_id: expected letters, digits, '.', '_' or '-', got '", jobId, "'"));
  }
  return "/tmp/dsrun-" + jobId;
}

HostLock::HostLock(const std::string& dir) {
  const std::string path = strCat(dir, "/lock-", thisHostName());
  fd_.reset(::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
  if (!fd_.valid()) throw IoError(path, "open", errno, "locking the job directory");
  while (::flock(fd_.get(), LOCK_EX) != 0) {
    if (errno != EINTR) throw IoError(path, "flock", errno, "locking the job directory");
  }
}

void queueControlLines(const std::string& dir, const std::string& lines) {
  const std::string path = strCat(dir, "/pending-", thisHostName());
  UniqueFd fd(::open(path.c_str(), O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0600));
  if (!fd.valid()) throw IoError(path, "open", errno, "queueing control lines for dsrun-launch");
  const ssize_t n = ::write(fd.get(), lines.data(), lines.size());
  if (n != static_cast<ssize_t>(lines.size())) {
    throw IoError(path, "write", n < 0 ? errno : EIO, "queueing control lines for dsrun-launch");
  }
}

JobRegistration::JobRegistration(const std::string& jobId) : dir_(jobDir(jobId)) {
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) throw IoError(dir_, "mkdir", errno, "registering the job");
  const HostLock lock(dir_);
  fifo_ = strCat(dir_, "/control-", thisHostName(), "-", ::getpid());
  ::unlink(fifo_.c_str());  // left by a SIGKILLed launcher of this job whose pid is ours now
  if (::mkfifo(fifo_.c_str(), 0600) != 0) throw IoError(fifo_, "mkfifo", errno, "registering the job");
  // Read-write: this process is then a writer too, so the FIFO never reads end of file between two
  // `dsrun-launch --signal` writers, and opening it does not wait for one.
  control_.reset(::open(fifo_.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
  if (!control_.valid()) throw IoError(fifo_, "open", errno, "registering the job");
  // Signals sent before this launcher could be found (pdsh starts the signal command on every host at once,
  // and this host's login may have been slower): they arrive as if sent now, in order.
  const std::string pending = strCat(dir_, "/pending-", thisHostName());
  const std::string queued = readAll(pending);
  if (!queued.empty()) {
    const ssize_t n = ::write(control_.get(), queued.data(), queued.size());
    if (n != static_cast<ssize_t>(queued.size())) throw IoError(fifo_, "write", n < 0 ? errno : EIO, "registering the job");
  }
  ::unlink(pending.c_str());
  pidFile_ = strCat(dir_, "/launch-", thisHostName(), "-", ::getpid(), ".pid");
  std::ofstream out(pidFile_);
  out << ::getpid() << "\n";
  if (!out) throw IoError(pidFile_, "write", errno, "registering the job");
}

JobRegistration::~JobRegistration() {
  ::unlink(pidFile_.c_str());
  ::unlink(fifo_.c_str());
  ::unlink(strCat(dir_, "/lock-", thisHostName()).c_str());
  ::rmdir(dir_.c_str());  // fails while other launchers or a kill mark remain: fine
}

bool JobRegistration::killed() const { return ::access((dir_ + "/killed").c_str(), F_OK) == 0; }

std::vector<pid_t> processesOfJob(const std::string& jobId, pid_t self) {
  const std::string needle = strCat(kEnvJobId, "=", jobId);
  const std::string ownHost = utsNamespace("self");
  std::vector<pid_t> pids;
  for (const std::string& name : listDir("/proc")) {
    if (!allDigits(name)) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == self) continue;
    // Another host's process when hosts share one kernel (containers, the test cluster's namespaces).
    if (utsNamespace(name) != ownHost) continue;
    const std::string environ = readAll(strCat("/proc/", name, "/environ"));
    // Entries are NUL-separated: match a whole entry, never a substring of another job's id.
    size_t at = 0;
    while ((at = environ.find(needle, at)) != std::string::npos) {
      const bool starts = at == 0 || environ[at - 1] == '\0';
      const size_t end = at + needle.size();
      if (starts && (end == environ.size() || environ[end] == '\0')) {
        pids.push_back(pid);
        break;
      }
      at = end;
    }
  }
  return pids;
}

void markJobKilled(const std::string& jobId) {
  const std::string dir = jobDir(jobId);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw IoError(dir, "mkdir", errno, "marking the job killed");
  const int mark = ::open((dir + "/killed").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  if (mark < 0) throw IoError(dir + "/killed", "open", errno, "marking the job killed");
  ::close(mark);
}

int killJob(const std::string& jobId, Seconds grace) {
  const std::string dir = jobDir(jobId);
  markJobKilled(jobId);

  std::set<pid_t> signalled;
  // Launchers first: they forward SIGTERM to their ranks once and report; stray processes get it directly.
  std::vector<pid_t> launchers = registeredLaunchers(dir);
  for (pid_t pid : launchers) {
    if (::kill(pid, SIGTERM) == 0) signalled.insert(pid);
  }
  if (launchers.empty()) {
    for (pid_t pid : processesOfJob(jobId, ::getpid())) {
      if (::kill(pid, SIGTERM) == 0) signalled.insert(pid);
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    bool any = !processesOfJob(jobId, ::getpid()).empty();
    for (pid_t pid : launchers) any = any || alive(pid);
    if (!any) return static_cast<int>(signalled.size());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (pid_t pid : registeredLaunchers(dir)) {
    if (::kill(pid, SIGKILL) == 0) signalled.insert(pid);
  }
  for (pid_t pid : processesOfJob(jobId, ::getpid())) {
    if (::kill(pid, SIGKILL) == 0) signalled.insert(pid);
  }
  reportSurvivors(jobId);
  return static_cast<int>(signalled.size());
}

}  // namespace dsrun::launcher
