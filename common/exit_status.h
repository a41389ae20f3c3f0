#pragma once
// How a rank ended, in the words and numbers dsrun reports (shell conventions).

#include <string>

namespace dsrun {

/// Shell-style exit code of a waitpid() status: the exit code, or 128+signal for a signal.
int exitCodeOf(int waitStatus);

/// True unless the status is a normal exit with code 0.
bool isFailure(int waitStatus);

/// "exited with code 3" or "was killed by signal 9 (SIGKILL)".
std::string describeWaitStatus(int waitStatus);

/// "SIGTERM" for 15; "signal 64" for a number without a name.
std::string signalName(int signal);

}  // namespace dsrun
