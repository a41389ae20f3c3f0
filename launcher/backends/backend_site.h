#pragma once
// BackendSite: what the multi-node backends (command, ssh) and the local one need from the machine
// (dsrun-launch's path, the launch directory, a PATH lookup), injected so tests build argv without touching it.

#include <functional>
#include <string>

#include "launcher/backends/node_launch_command.h"

namespace dsrun::launcher {

/// What a backend needs from the machine.
struct BackendSite {
  NodeSite node;                                        ///< dsrun-launch path and launch directory
  std::function<bool(const std::string&)> inPath;       ///< is this program in PATH?
};

/// The real site: dsrun-launch as locateNodeLaunch finds it from the running executable (or
/// $DSRUN_LAUNCH when set), the current directory, and a PATH lookup.
BackendSite realBackendSite();

/// The full path of `program` in `path` (a PATH value), or empty.
std::string findInPath(const std::string& program, const std::string& path);

}  // namespace dsrun::launcher
