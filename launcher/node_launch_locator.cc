#include "launcher/node_launch_locator.h"

#include <filesystem>

#include "common/strings.h"

namespace dsrun::launcher {

std::vector<std::string> nodeLaunchCandidates(const std::string& selfExe, const std::string& pathEnv) {
  std::vector<std::string> out;
  const size_t slash = selfExe.rfind('/');
  if (slash != std::string::npos) {
    const std::string dir = slash == 0 ? std::string() : selfExe.substr(0, slash);
    out.push_back(dir + "/dsrun-launch");
    out.push_back(std::filesystem::path(dir + "/../lib/dsrun/dsrun-launch").lexically_normal().string());
  }
  if (!pathEnv.empty()) {
    for (const std::string& dir : split(pathEnv, ':')) out.push_back((dir.empty() ? "." : dir) + "/dsrun-launch");
  }
  return out;
}

std::string locateNodeLaunch(const std::string& selfExe, const std::string& pathEnv,
                             const std::function<bool(const std::string&)>& isExecutable) {
  for (const std::string& candidate : nodeLaunchCandidates(selfExe, pathEnv)) {
    if (isExecutable(candidate)) return candidate;
  }
  return "";
}

}  // namespace dsrun::launcher
