#pragma once
// runRankProcess: rank mode's executor. Starts one rank as a child (not exec: dsrun-launch stays to report
// the rank's host, pid and cause when it fails) and carries out the job controller's decisions for a job
// of one rank (common/job_controller.h): SIGINT/SIGTERM/SIGHUP forwarded, SIGKILL `killGrace` after the
// first one or at a second one, SIGUSR1/SIGUSR2 passed on each time; returns its shell-style exit code. Under Slurm every signal srun or scancel sends reaches every process of the step
// (proctrack/cgroup and linuxproc signal them all, proctrack/pgid the task's process group), the rank
// included: there the rank stays in dsrun-launch's process group and nothing is passed on, so it gets each
// signal exactly once whatever the proctrack plugin (passing it on counted USR1 twice on the test cluster).

#include "common/stop_times.h"
#include "supervision/rank_spec.h"

namespace dsrun::launcher {

/// Runs `spec` with inherited stdout/stderr/stdin until it exits. On failure prints
/// "dsrun: rank R (HOST pid P) exited with code C" (the format JobSupervisor uses, which dsrun's
/// multi-node backends recognise) on stderr. Throws IoError if it cannot be spawned. Main thread only.
/// `signalsReachRank`: the Slurm case above.
int runRankProcess(const RankSpec& spec, Seconds killGrace, bool signalsReachRank);

}  // namespace dsrun::launcher
