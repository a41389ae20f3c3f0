#include "supervision/oom_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "common/strings.h"

namespace dsrun {

namespace {

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The file that counts OOM kills in this process's memory cgroup: cgroup v2 ("0::/path") memory.events,
// else cgroup v1 ("N:memory:/path") memory.oom_control. Empty when neither exists.
std::string oomCountFile() {
  std::istringstream lines(readAll("/proc/self/cgroup"));
  std::string line;
  std::string v2, v1;
  while (std::getline(lines, line)) {
    const std::vector<std::string> parts = split(line, ':');
    if (parts.size() < 3) continue;
    if (parts[0] == "0" && parts[1].empty()) v2 = "/sys/fs/cgroup" + parts[2] + "/memory.events";
    for (const std::string& controller : split(parts[1], ',')) {
      if (controller == "memory") v1 = "/sys/fs/cgroup/memory" + parts[2] + "/memory.oom_control";
    }
  }
  for (const std::string& path : {v2, v1}) {
    if (!path.empty() && ::access(path.c_str(), R_OK) == 0 && OomLog::oomKillCount(readAll(path))) return path;
  }
  return "";
}

}  // namespace

OomLog::OomLog() {
  kmsg_ = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (kmsg_ >= 0 && ::lseek(kmsg_, 0, SEEK_END) < 0) {
    ::close(kmsg_);
    kmsg_ = -1;
  }
  countFile_ = oomCountFile();
  if (!countFile_.empty()) countAtStart_ = oomKillCount(readAll(countFile_));
}

OomLog::~OomLog() {
  if (kmsg_ >= 0) ::close(kmsg_);
}

bool OomLog::kernelLogNamesPid(const std::string& text, pid_t pid) {
  return text.find(strCat("Killed process ", pid, " (")) != std::string::npos;
}

std::optional<long long> OomLog::oomKillCount(const std::string& text) {
  std::istringstream lines(text);
  std::string name;
  long long value = 0;
  while (lines >> name >> value) {
    if (name == "oom_kill") return value;
  }
  return std::nullopt;
}

std::optional<std::string> OomLog::oomKilled(pid_t pid) {
  if (kmsg_ >= 0) {
    char record[8192];
    while (true) {
      const ssize_t n = ::read(kmsg_, record, sizeof record);
      if (n > 0) {
        const std::string text(record, static_cast<size_t>(n));
        if (text.find("Killed process") != std::string::npos) kernelLog_ += text;
        continue;
      }
      if (n < 0 && errno == EPIPE) continue;  // records overwritten while we were away: keep reading
      if (n < 0 && errno == EINTR) continue;
      break;  // EAGAIN: nothing more now
    }
    if (kernelLogNamesPid(kernelLog_, pid)) return std::string("kernel log");
  }
  if (countAtStart_) {
    const std::optional<long long> now = oomKillCount(readAll(countFile_));
    if (now && *now > *countAtStart_) {
      countAtStart_ = now;  // one kill explains one rank
      return countFile_.find("memory.events") != std::string::npos ? std::string("cgroup memory.events oom_kill")
                                                                   : std::string("cgroup memory.oom_control oom_kill");
    }
  }
  return std::nullopt;
}

}  // namespace dsrun
