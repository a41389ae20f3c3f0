#include "launcher/node_launch/job_signal.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "supervision/launch_lines.h"
#include "common/error.h"
#include "common/strings.h"
#include "common/unique_fd.h"
#include "launcher/node_launch/job_registry.h"

namespace dsrun::launcher {

JobSignalResult signalJob(const std::string& jobId, const std::vector<int>& signals) {
  const std::string dir = jobDir(jobId);
  std::string lines;
  bool stop = false;
  for (int signal : signals) {
    lines += controlLine(signal);
    stop = stop || isStopSignal(signal);
  }
  // One write of at most PIPE_BUF bytes is atomic: the lines of two concurrent senders never interleave.
  if (lines.size() > PIPE_BUF) throw ConfigError(strCat("--signal: too many signals at once (", signals.size(), ")"));
  JobSignalResult result;
  if (stop) {
    markJobKilled(jobId);
    result.marked = true;
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw IoError(dir, "mkdir", errno, "signalling the job");
  const HostLock lock(dir);
  // Only this host's launchers: /tmp can be shared between hosts, the FIFO's reader cannot.
  const std::string prefix = strCat("control-", thisHostName(), "-");
  DIR* listing = ::opendir(dir.c_str());
  if (listing == nullptr) throw IoError(dir, "opendir", errno, "signalling the job");
  std::vector<std::string> fifos;
  while (dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    if (startsWith(name, prefix) && name.find_first_not_of("0123456789", prefix.size()) == std::string::npos &&
        name.size() > prefix.size()) {
      fifos.push_back(dir + "/" + name);
    }
  }
  ::closedir(listing);
  for (const std::string& fifo : fifos) {
    // Non-blocking write-only open fails with ENXIO when no process has it open for reading: that
    // launcher is gone (killed before it could remove its FIFO), which is not an error here.
    UniqueFd fd(::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    if (!fd.valid()) {
      if (errno == ENXIO || errno == ENOENT) continue;
      throw IoError(fifo, "open", errno, "sending control lines to dsrun-launch");
    }
    const ssize_t n = ::write(fd.get(), lines.data(), lines.size());
    if (n != static_cast<ssize_t>(lines.size())) {
      throw IoError(fifo, "write", n < 0 ? errno : EAGAIN, "sending control lines to dsrun-launch");
    }
    ++result.launchers;
  }
  if (result.launchers == 0) {
    // This host's launcher has not registered yet (its login is slower than ours): it finds them there.
    queueControlLines(dir, lines);
    result.queued = true;
  }
  return result;
}

}  // namespace dsrun::launcher
