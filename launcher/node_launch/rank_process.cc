#include "launcher/node_launch/rank_process.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <iostream>

#include "supervision/launch_lines.h"
#include "common/error.h"
#include "common/exit_status.h"
#include "common/job_controller.h"
#include "supervision/posix_spawner.h"
#include "supervision/process_state.h"
#include "supervision/signal_pipe.h"

namespace dsrun::launcher {

namespace {

/// After SIGKILL, how long the rank may take to die before it is given up (state D): as runLocalJob's.
constexpr double kKillWaitS = 10;

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int runRankProcess(const RankSpec& spec, Seconds killGrace, bool signalsReachRank) {
  SignalPipe signals(controlSignals());
  PosixSpawner spawner;
  SpawnOptions options;
  options.output = OutputMode::Inherit;
  options.cores = spec.cores;
  options.ownProcessGroup = !signalsReachRank;
  const Subprocess child = spawner.spawn(spec.command, options);
  // The decisions are the one job controller's (a job of one rank); this loop only carries them out.
  JobControllerOptions policy;
  policy.killGraceS = killGrace.count();
  policy.killWaitS = kKillWaitS;
  JobController job(1, policy);
  job.rankStarted(0);
  // In its own group the rank and whatever it started are signalled together; in ours, only the rank (the
  // group is dsrun-launch's own, and Slurm cleans up the step's processes).
  const auto signalRank = [&](int signal) {
    if (signalsReachRank) {
      ::kill(child.pid, signal);
    } else {
      spawner.signalGroup(child.pid, signal);
    }
  };
  const auto carryOut = [&](const JobDecision& decision) {
    switch (decision.action) {
      case JobDecision::Action::None: return;
      case JobDecision::Action::Kill: signalRank(SIGKILL); return;
      case JobDecision::Action::Abandon: return;  // the loop below reports it and returns
      case JobDecision::Action::Stop:
      case JobDecision::Action::Forward:
        // Under Slurm the rank received this very signal from slurmstepd already.
        if (!signalsReachRank) signalRank(decision.signal);
        return;
    }
  };
  while (true) {
    pollfd fd{signals.fd(), POLLIN, 0};
    int timeoutMs = -1;
    if (const std::optional<double> deadline = job.nextDeadline()) {
      timeoutMs = std::max(0, static_cast<int>(std::ceil((*deadline - nowSeconds()) * 1000)));
    }
    if (::poll(&fd, 1, timeoutMs) < 0 && errno != EINTR) throw IoError("", "poll", errno, "waiting for the rank");
    for (int signal : signals.drain()) {
      if (signal != SIGCHLD) carryOut(job.onSignal(signal, nowSeconds()));
    }
    for (const JobDecision& decision : job.onTime(nowSeconds())) carryOut(decision);
    if (job.abandoned(0)) {
      std::cerr << "dsrun: rank " << spec.rank << " (" << spec.host << " pid " << child.pid << ") is still alive "
                << kKillWaitS << "s after SIGKILL, in state " << processState(child.pid) << "; giving up on it"
                << std::endl;
      return exitCodeOf(SIGKILL);
    }
    int status = 0;
    const pid_t done = ::waitpid(child.pid, &status, WNOHANG);
    if (done != child.pid) continue;
    if (!signalsReachRank) spawner.signalGroup(child.pid, SIGKILL);  // whatever the rank left in its group
    const std::optional<int> stopSignal = job.firstSignal();
    job.onRankExit(0, status, nowSeconds());
    // A rank stopped because dsrun-launch was told to stop is not the job's failure (dsrun names the signal).
    if (isFailure(status) && !stopSignal) {
      std::cerr << rankFailureLine(spec.rank, spec.host, child.pid, describeWaitStatus(status)) << std::endl;
    }
    // Rank mode's code goes to mpirun/srun: a rank that exits 0 after the stop signal ends the task cleanly.
    return stopSignal && !WIFEXITED(status) ? 128 + *stopSignal : exitCodeOf(status);
  }
}

}  // namespace dsrun::launcher
