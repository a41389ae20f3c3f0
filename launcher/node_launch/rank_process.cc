#include "launcher/node_launch/rank_process.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <iostream>
#include <algorithm>
#include <optional>

#include "common/control_line.h"
#include "common/error.h"
#include "common/exit_status.h"
#include "common/posix_spawner.h"
#include "common/signal_pipe.h"

namespace dsrun {

namespace {

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int runRankProcess(const RankSpec& spec, double killGraceS, bool signalsReachRank) {
  SignalPipe signals(controlSignals());
  PosixSpawner spawner;
  SpawnOptions options;
  options.output = OutputMode::Inherit;
  options.cores = spec.cores;
  options.ownProcessGroup = !signalsReachRank;
  const Subprocess child = spawner.spawn(spec.command, options);
  // In its own group the rank and whatever it started are signalled together; in ours, only the rank (the
  // group is dsrun-launch's own, and Slurm cleans up the step's processes).
  const auto signalRank = [&](int signal) {
    if (signalsReachRank) {
      ::kill(child.pid, signal);
    } else {
      spawner.signalGroup(child.pid, signal);
    }
  };

  std::optional<int> firstSignal;
  double killAt = -1;  // <0: no SIGKILL pending
  while (true) {
    pollfd fd{signals.fd(), POLLIN, 0};
    int timeoutMs = -1;
    if (killAt >= 0) timeoutMs = std::max(0, static_cast<int>((killAt - nowSeconds()) * 1000) + 1);
    if (::poll(&fd, 1, timeoutMs) < 0 && errno != EINTR) throw IoError("", "poll", errno, "waiting for the rank");
    for (int signal : signals.drain()) {
      if (signal == SIGCHLD) continue;
      if (!isStopSignal(signal)) {
        // SIGUSR1/SIGUSR2 (srun and mpirun forward them): passed on, unless the rank got it as well.
        if (!signalsReachRank) signalRank(signal);
        continue;
      }
      if (firstSignal) {
        signalRank(SIGKILL);
        continue;
      }
      firstSignal = signal;
      if (!signalsReachRank) signalRank(signal);
      killAt = nowSeconds() + killGraceS;
    }
    if (killAt >= 0 && nowSeconds() >= killAt) {
      signalRank(SIGKILL);
      killAt = -1;
    }
    int status = 0;
    const pid_t done = ::waitpid(child.pid, &status, WNOHANG);
    if (done == child.pid) {
      if (!signalsReachRank) spawner.signalGroup(child.pid, SIGKILL);  // whatever the rank left in its group
      // A rank stopped because dsrun-launch was told to stop is not the job's failure.
      if (isFailure(status) && !firstSignal) {
        std::cerr << "dsrun: rank " << spec.rank << " (" << spec.host << " pid " << child.pid << ") "
                  << describeWaitStatus(status) << std::endl;
      }
      return firstSignal && !WIFEXITED(status) ? 128 + *firstSignal : exitCodeOf(status);
    }
  }
}

}  // namespace dsrun
