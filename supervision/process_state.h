#pragma once
// processState: what the kernel says a process is doing, for messages about a process that will not die.

#include <sys/types.h>

#include <string>

namespace dsrun {

/// The "State:" of /proc/<pid>/status, e.g. "D (disk sleep)"; empty when the process is gone or unreadable.
std::string processState(pid_t pid);

}  // namespace dsrun
