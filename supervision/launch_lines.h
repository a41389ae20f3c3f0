#pragma once
// The control channel from dsrun to a node's dsrun-launch (ssh: the channel's stdin; pdsh: a FIFO in the
// job's directory, written by `dsrun-launch --signal`). One line per signal dsrun received, in order:
//   signal USR1
// The names are the signal's without "SIG" (INT, TERM, HUP, USR1, USR2): numbers differ between systems,
// names do not. dsrun-launch acts on each line as if it had received that signal itself (runLocalJob's
// rules), so the ranks get each signal exactly as often as dsrun did. End of file on the channel means
// the controller is gone and acts as SIGTERM. Lines a reader does not understand are ignored with a
// warning, so a newer dsrun can add words without breaking an older dsrun-launch.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dsrun {

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

}  // namespace dsrun
