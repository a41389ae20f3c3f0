#include "common/exit_status.h"

#include <sys/wait.h>

#include <cstring>

#include "common/strings.h"

namespace dsrun {

int exitCodeOf(int waitStatus) {
  if (WIFEXITED(waitStatus)) return WEXITSTATUS(waitStatus);
  if (WIFSIGNALED(waitStatus)) return 128 + WTERMSIG(waitStatus);
  return 1;  // stopped/continued are never passed here; treat as a failure rather than success
}

bool isFailure(int waitStatus) { return !(WIFEXITED(waitStatus) && WEXITSTATUS(waitStatus) == 0); }

std::string describeWaitStatus(int waitStatus) {
  if (WIFEXITED(waitStatus)) return strCat("exited with code ", WEXITSTATUS(waitStatus));
  if (WIFSIGNALED(waitStatus)) {
    int sig = WTERMSIG(waitStatus);
    return strCat("was killed by signal ", sig, " (", signalName(sig), ")");
  }
  return strCat("ended with wait status ", waitStatus);
}

std::string signalName(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  if (abbrev == nullptr) return strCat("signal ", signal);
  return strCat("SIG", abbrev);
}

}  // namespace dsrun
