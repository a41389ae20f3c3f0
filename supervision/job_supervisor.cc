#include "supervision/job_supervisor.h"

#include <signal.h>
#include <sys/wait.h>

#include "common/exit_status.h"
#include "common/exit_timeout_line.h"
#include "common/logging.h"
#include "supervision/launch_lines.h"
#include "supervision/process_state.h"

namespace dsrun {
namespace {

std::string plural(size_t n, const char* word) { return strCat(n, " ", word, n == 1 ? "" : "s"); }

JobControllerOptions controllerOptions(const SupervisorOptions& options) {
  JobControllerOptions out;
  out.killGraceS = options.stop.killGrace.count();
  out.exitTimeoutS = options.stop.exitTimeoutS();
  out.killWaitS = options.killWaitS;
  out.whileStopping = SignalWhileStopping::Kill;
  out.stopCausedExitIsFailure = true;  // the first rank reaped with a failure decides the code
  return out;
}

}  // namespace

JobSupervisor::JobSupervisor(const std::vector<RankSpec>& ranks, SupervisorOptions options, Spawner& spawner)
    : ranks_(ranks),
      options_(options),
      spawner_(spawner),
      controller_(ranks.size(), controllerOptions(options)),
      pids_(ranks.size(), -1) {}

std::optional<Subprocess> JobSupervisor::start(size_t index, const SpawnOptions& options, double now) {
  DSRUN_CHECK(index == started_ && index < ranks_.size(), "ranks start in order, got index ", index);
  DSRUN_CHECK(!stopping(), "start() after the job began stopping");
  try {
    Subprocess child = spawner_.spawn(ranks_[index].command, options);
    pids_[index] = child.pid;
    ++started_;
    controller_.rankStarted(index);
    DSRUN_LOG(DEBUG) << "rank " << ranks_[index].rank << " started as pid " << child.pid << ": "
                     << ranks_[index].command.toShellString();
    return child;
  } catch (const IoError& e) {
    spawnError_ = e;
    const JobDecision decision = controller_.onSpawnFailed(
        TimedFailure{secondsToMicros(now), 1, e.what(), ranks_[index].host}, now);
    carryOut(decision);
    if (decision.ranks > 0) {
      DSRUN_LOG(INFO) << "rank " << ranks_[index].rank << " could not be started; stopping the "
                      << plural(decision.ranks, "rank") << " already started";
    }
    return std::nullopt;
  }
}

void JobSupervisor::onExit(pid_t pid, int waitStatus, double now) {
  size_t index = 0;
  while (index < pids_.size() && !(controller_.running(index) && pids_[index] == pid)) ++index;
  if (index == pids_.size()) return;
  // Whatever the rank left behind in its process group dies with it.
  spawner_.signalGroup(pid, SIGKILL);
  std::string how = describeWaitStatus(waitStatus);
  DSRUN_LOG(DEBUG) << who(index) << " " << how;
  const JobDecision decision = controller_.onRankExit(index, waitStatus, now, strCat(who(index), " ", how),
                                                      ranks_[index].host);
  if (decision.action == JobDecision::Action::Stop) {
    if (WIFSIGNALED(waitStatus) && WTERMSIG(waitStatus) == SIGKILL && options_.oomKilled) {
      if (std::optional<std::string> source = options_.oomKilled(pid)) {
        how += strCat(": out of memory (the kernel's OOM killer, per the ", *source, ")");
      }
    }
    carryOut(decision);
    if (!firstFailure_) firstFailure_ = FirstFailure{index, pid, how, exitCodeOf(waitStatus)};
    notices_.push_back(strCat(rankFailureLine(ranks_[index].rank, host(index), pids_[index], how),
                              decision.ranks > 0 ? "; terminated " + plural(decision.ranks, "other rank") : ""));
  } else {
    if (decision.exitTimeoutArmed) firstClean_ = who(index);
    // Every clean exit, not only the first: dsrun names the ranks its job-wide exit timeout stops from them.
    if (options_.announceCleanExit && options_.stop.exitTimeout && waitStatus == 0 && !stopping()) {
      notices_.push_back(cleanExitLine(ranks_[index].rank, host(index), pids_[index]));
    }
  }
}

void JobSupervisor::onSignal(int signal, double now) {
  const JobDecision decision = controller_.onSignal(signal, now);
  carryOut(decision);
  if (decision.action == JobDecision::Action::Kill) {
    if (decision.ranks > 0) {
      notices_.push_back(strCat("dsrun: received ", signalName(signal), " while stopping; sent SIGKILL to ",
                                plural(decision.ranks, "rank")));
    }
    return;
  }
  // Forward (SIGUSR1/SIGUSR2, Slurm's preemption warning: passed on as is, each time) or the stop.
  notices_.push_back(strCat("dsrun: received ", signalName(signal), "; forwarded it to ", plural(decision.ranks, "rank")));
}

void JobSupervisor::onHang(const std::string& what, const std::string& host, double now) {
  const JobDecision decision = controller_.onFailure(TimedFailure{secondsToMicros(now), 1, what, host}, now);
  if (decision.action != JobDecision::Action::Stop) return;
  carryOut(decision);
  notices_.push_back(strCat("dsrun: ", what, "; terminated ", plural(decision.ranks, "rank")));
}

std::map<int, pid_t> JobSupervisor::runningPids() const {
  std::map<int, pid_t> out;
  for (size_t i = 0; i < pids_.size(); ++i) {
    if (controller_.running(i)) out[ranks_[i].rank] = pids_[i];
  }
  return out;
}

void JobSupervisor::onTime(double now) {
  for (const JobDecision& decision : controller_.onTime(now)) {
    if (decision.action == JobDecision::Action::Stop) {
      std::vector<std::string> running;
      for (size_t i = 0; i < pids_.size(); ++i) {
        if (controller_.running(i)) running.push_back(who(i));
      }
      carryOut(decision);
      notices_.push_back(exitTimeoutLine(firstClean_, options_.stop.exitTimeoutS(), running));
    } else if (decision.action == JobDecision::Action::Abandon) {
      for (size_t i = 0; i < pids_.size(); ++i) {
        if (!controller_.abandoned(i)) continue;
        const std::string state = options_.stateOf ? options_.stateOf(pids_[i]) : processState(pids_[i]);
        notices_.push_back(strCat("dsrun: ", who(i), " is still alive ", options_.killWaitS, "s after SIGKILL, in state ",
                                  state.empty() ? std::string("unknown") : state,
                                  "; giving up on it (a process in state D waits in the kernel, e.g. on a dead NFS "
                                  "mount, and dies when that returns)"));
      }
    } else {
      for (size_t i = 0; i < pids_.size(); ++i) {
        if (!controller_.running(i)) continue;
        DSRUN_LOG(WARN) << who(i) << " still running " << options_.stop.killGrace.count()
                        << "s after it was signalled; sending SIGKILL";
      }
      carryOut(decision);
    }
  }
}

std::vector<pid_t> JobSupervisor::abandonedPids() const {
  std::vector<pid_t> out;
  for (size_t i = 0; i < pids_.size(); ++i) {
    if (controller_.abandoned(i)) out.push_back(pids_[i]);
  }
  return out;
}

void JobSupervisor::abort() { carryOut(controller_.abort()); }

std::optional<double> JobSupervisor::nextDeadline() const { return controller_.nextDeadline(); }

std::vector<std::string> JobSupervisor::takeNotices() {
  std::vector<std::string> out;
  out.swap(notices_);
  return out;
}

void JobSupervisor::carryOut(const JobDecision& decision) {
  if (decision.action == JobDecision::Action::None) return;
  for (size_t i = 0; i < pids_.size(); ++i) {
    if (!controller_.running(i)) continue;
    if (decision.action == JobDecision::Action::Stop) {
      DSRUN_LOG(DEBUG) << "sending " << signalName(decision.signal) << " to " << who(i);
    }
    spawner_.signalGroup(pids_[i], decision.signal);
  }
}

std::string JobSupervisor::host(size_t index) const {
  return ranks_[index].host.empty() ? "localhost" : ranks_[index].host;
}

std::string JobSupervisor::who(size_t index) const {
  return strCat("rank ", ranks_[index].rank, " (", host(index), " pid ", pids_[index], ")");
}

}  // namespace dsrun
