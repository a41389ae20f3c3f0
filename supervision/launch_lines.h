#pragma once
// Every line dsrun and a node's dsrun-launch exchange, each writer beside its reader, so that the two sides
// cannot drift apart. dsrun-launch is runLocalJob on a node, so the lines the local supervisor writes and
// reads are these lines: they live with it, below both dsrun and dsrun-launch (docs/architecture.md).
//
// dsrun -> dsrun-launch, on the control channel (ssh: the channel's stdin; pdsh: a FIFO in the job's
// directory, written by `dsrun-launch --signal`). One line per signal dsrun received, in order:
//   signal USR1
// The names are the signal's without "SIG" (INT, TERM, HUP, USR1, USR2): numbers differ between systems,
// names do not. dsrun-launch acts on each line as if it had received that signal itself (runLocalJob's
// rules), so the ranks get each signal exactly as often as dsrun did. End of file on the channel means
// the controller is gone and acts as SIGTERM. An empty line is a heartbeat (ssh, --stdin_timeout_ms).
// Lines a reader does not understand are ignored with a warning, so a newer dsrun can add words without
// breaking an older dsrun-launch.
//
// dsrun-launch -> dsrun, on its stderr, found anywhere in a forwarded line (pdsh prefixes "HOST: "):
//   dsrun: rank R (HOST pid P) <cause>[; ...]                   a rank failed (JobSupervisor, rank mode)
//   dsrun: rank R (HOST pid P) finished cleanly                 with --exit_timeout_s
//   dsrun: rank R (HOST) stderr| TEXT                           the failing rank's stderr tail, oldest first
//   dsrun: rank R (HOST) log file: PATH                         its --enable_each_rank_log file
//   dsrun-launch: HOST (node N, ranks A-B) exited with code C   the node's summary, the last resort
//   dsrun-launch: node N (HOST) starting ranks A-B              an elastic ssh round got this far

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dsrun {

// --- dsrun -> dsrun-launch ---

/// "signal USR1\n" for SIGUSR1. Throws ConfigError for a signal outside controlSignals().
std::string controlLine(int signal);

/// "USR1" for SIGUSR1 (the name controlLine and `dsrun-launch --signal` use). Throws ConfigError for a
/// signal outside controlSignals().
std::string controlSignalName(int signal);

/// The signal a control line (without its '\n') asks for, or nullopt when the line is not one.
std::optional<int> parseControlLine(std::string_view line);

/// The signal named `name` ("USR1" or "SIGUSR1", any case), if it is one of controlSignals().
std::optional<int> controlSignalFromName(std::string_view name);

/// The signals the channel carries: SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2.
const std::vector<int>& controlSignals();

/// True for SIGINT, SIGTERM and SIGHUP: the signals that stop a job (the others are passed on only).
bool isStopSignal(int signal);

/// The heartbeat dsrun writes on an ssh control channel (an empty line, "\n"): it keeps
/// --stdin_timeout_ms from firing and is not a control line.
std::string heartbeatLine();
/// True for a heartbeat line (without its '\n'); the reader drops it.
bool isHeartbeatLine(std::string_view line);

// --- dsrun-launch -> dsrun ---

/// A rank's end as dsrun learns it from a forwarded line.
struct RankFailure {
  std::string host;   ///< where it ran
  int rank = -1;      ///< global rank; -1 when only the node is known
  int pid = -1;       ///< its pid on `host`; -1 when unknown
  std::string cause;  ///< "exited with code 3", "was killed by signal 9 (SIGKILL)"
  int exitCode = 1;   ///< shell-style code (128+signal for a signal)
};

/// "dsrun: rank R (HOST pid P) CAUSE", CAUSE as describeWaitStatus words it ("exited with code 3").
std::string rankFailureLine(int rank, const std::string& host, long pid, const std::string& cause);
/// "dsrun-launch: HOST (node N, ranks A-B) exited with code C".
std::string nodeExitLine(const std::string& host, int nodeRank, int firstRank, int lastRank, int code);
/// The failure `line` reports (a rankFailureLine or a nodeExitLine), if it is one.
std::optional<RankFailure> parseFailureLine(std::string_view line);

/// "dsrun: rank R (HOST pid P) finished cleanly" (dsrun-launch with --exit_timeout_s).
std::string cleanExitLine(int rank, const std::string& host, long pid);
/// The rank, host and pid of a cleanExitLine, with cause "finished cleanly" and exit code 0.
std::optional<RankFailure> parseCleanExitLine(std::string_view line);

/// One root-cause line of dsrun-launch (supervision/local_job.h, rootCauseAsLines).
struct RootCauseLine {
  int rank = -1;       ///< the failing rank
  bool isLog = false;  ///< true: `text` is its log file's path
  std::string text;    ///< the stderr line, or the path
};
/// "dsrun: rank R (HOST) stderr| TEXT": one line of the failing rank's stderr tail.
std::string rootCauseTailLine(int rank, const std::string& host, const std::string& text);
/// "dsrun: rank R (HOST) log file: PATH": the failing rank's --enable_each_rank_log file.
std::string rootCauseLogLine(int rank, const std::string& host, const std::string& path);
/// The root-cause line found anywhere in `line`, if there is one.
std::optional<RootCauseLine> parseRootCauseLine(std::string_view line);

/// "dsrun-launch: node N (HOST) starting ranks A-B": an elastic ssh round reached the ranks' start on
/// that node (ssh_job.h; dsrun does not forward it).
std::string nodeStartingLine(int nodeRank, const std::string& host, int firstRank, int lastRank);
/// True for a nodeStartingLine.
bool isNodeStartingLine(std::string_view line);

}  // namespace dsrun
