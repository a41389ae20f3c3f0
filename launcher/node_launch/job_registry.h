#pragma once
// Per-host bookkeeping of a multi-node job by its DSRUN_JOB_ID, so that a kill command stops exactly that
// job (never `pkill -f` pattern matching): dsrun-launch records its pid in /tmp/dsrun-<job id>/, and
// `dsrun-launch --kill` signals those launchers, then every process whose environment holds
// DSRUN_JOB_ID=<job id>. A kill that arrives before the launch leaves a "killed" mark the launch honours.
// Each launcher also reads a FIFO there, control-<host>-<pid>, for control lines (job_signal.h). Lines sent
// before this host's launcher registered wait in pending-<host>; both sides hold lock-<host> (flock) while
// they look, so a line is either written into a FIFO or found in pending-<host> by the launcher registering.

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/stop_times.h"
#include "common/unique_fd.h"

namespace dsrun::launcher {

/// /tmp/dsrun-<jobId>. Throws ConfigError unless jobId is non-empty and made of [A-Za-z0-9._-].
std::string jobDir(const std::string& jobId);

/// Registration of one dsrun-launch process for the job; removed again by the destructor.
class JobRegistration {
 public:
  /// Creates the job directory, this process's control FIFO (opened for reading) and pid file, in that
  /// order, so a launcher that can be found can also be told; control lines that were queued for this host
  /// before (queueControlLines) are moved into the FIFO. Throws IoError if it cannot.
  explicit JobRegistration(const std::string& jobId);
  ~JobRegistration();
  JobRegistration(const JobRegistration&) = delete;
  JobRegistration& operator=(const JobRegistration&) = delete;

  /// True if a kill for this job already ran on this host (the launch must not start ranks).
  bool killed() const;
  /// The control FIFO's read end (non-blocking; opened read-write, so it never reaches end of file).
  int controlFd() const { return control_.get(); }

 private:
  std::string dir_;       ///< jobDir(jobId)
  std::string fifo_;      ///< dir_/control-<host>-<pid>
  UniqueFd control_;      ///< fifo_, read end
  std::string pidFile_;   ///< dir_/launch-<host>-<pid>.pid
};

/// Holds lock-<host> of a job directory (flock, exclusive) while it lives. Throws IoError.
class HostLock {
 public:
  explicit HostLock(const std::string& dir);
  HostLock(const HostLock&) = delete;
  HostLock& operator=(const HostLock&) = delete;

 private:
  UniqueFd fd_;
};

/// Appends control lines for this host's launcher of the job, which has not registered yet (call with the
/// HostLock held). Throws IoError.
void queueControlLines(const std::string& dir, const std::string& lines);

/// Marks job `jobId` killed on this host (a launch arriving later refuses to start). Throws IoError.
void markJobKilled(const std::string& jobId);

/// This host's name as gethostname() gives it (the control FIFOs are per host: /tmp may be shared).
std::string thisHostName();

/// Processes on this host whose environment has DSRUN_JOB_ID=<jobId> exactly, except `self`. "This host":
/// the same UTS (hostname) namespace, so hosts sharing one kernel (containers, the test cluster) stay apart.
std::vector<pid_t> processesOfJob(const std::string& jobId, pid_t self);

/// Stops job `jobId` on this host: marks it killed, SIGTERMs its registered launchers of this host (which stop their
/// ranks), waits up to `grace` for the job's processes to go, then SIGKILLs what is left. Returns how
/// many processes were signalled.
int killJob(const std::string& jobId, Seconds grace);

}  // namespace dsrun::launcher
