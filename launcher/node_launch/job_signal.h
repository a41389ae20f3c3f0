#pragma once
// `dsrun-launch --signal=USR1[,USR2...] --job_id=ID`: the pdsh backend's signal channel. pdsh cannot write
// to its remote commands' stdin, so dsrun runs this on every host instead, and it writes the control lines
// (supervision/launch_lines.h) into the FIFO of each dsrun-launch of the job on this host (job_registry.h).
// The launcher acts on each line as on the signal itself, so every rank gets every signal once, in order.

#include <string>
#include <vector>

namespace dsrun::launcher {

/// What signalJob did on this host.
struct JobSignalResult {
  int launchers = 0;  ///< dsrun-launch processes of the job that were sent the lines
  bool marked = false;  ///< the job was marked killed (a stop signal was among them)
  bool queued = false;  ///< no launcher of the job is registered here yet: the lines wait for it
};

/// Writes one control line per entry of `signals` (in order, in one atomic write) to every live launcher
/// of job `jobId` on this host; when none has registered yet, the lines are queued for the one that will
/// (job_registry.h), so a USR1 sent while a slow host is still logging in is not lost. (On a host whose
/// launcher has already finished they stay queued in /tmp/dsrun-<job id>/ unread.) When a stop signal
/// (INT, TERM, HUP) is among them the job is first marked killed, so a launch that has not registered yet
/// refuses to start instead of missing the stop. Throws ConfigError for a bad job id or signal, IoError
/// when the mark cannot be made or a write fails.
JobSignalResult signalJob(const std::string& jobId, const std::vector<int>& signals);

}  // namespace dsrun::launcher
