#pragma once
// locateNodeLaunch: where `dsrun` finds `dsrun-launch`, the per-node program its multi-node backends run.
// Pure (the file checks are injected), so every layout is tested without touching the disk.

#include <functional>
#include <string>
#include <vector>

namespace dsrun::launcher {

/// The paths tried, in order, for a `dsrun` running as `selfExe` (an absolute path, symlinks resolved):
///   1. <dir of dsrun>/dsrun-launch           the build tree and an install into bindir (the packages)
///   2. <dir of dsrun>/../lib/dsrun/dsrun-launch   a private-helper layout (like /usr/lib/openssh/)
///   3. each directory of `pathEnv` (a PATH value, empty entries meaning ".")
std::vector<std::string> nodeLaunchCandidates(const std::string& selfExe, const std::string& pathEnv);

/// The first candidate for which `isExecutable` holds, or "" when none does.
std::string locateNodeLaunch(const std::string& selfExe, const std::string& pathEnv,
                             const std::function<bool(const std::string&)>& isExecutable);

}  // namespace dsrun::launcher
