#include "launcher/backends/backend_site.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "common/strings.h"
#include "launcher/node_launch_locator.h"

namespace dsrun::launcher {

std::string findInPath(const std::string& program, const std::string& path) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0 ? program : "";
  for (const std::string& dir : split(path, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

BackendSite realBackendSite() {
  BackendSite site;
  const char* path = std::getenv("PATH");
  const std::string pathEnv = path != nullptr ? path : "/usr/bin:/bin";
  if (const char* explicitPath = std::getenv("DSRUN_LAUNCH"); explicitPath != nullptr && *explicitPath != '\0') {
    site.node.nodeLaunch = explicitPath;
  } else {
    char exe[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    const std::string self = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string("./dsrun");
    site.node.nodeLaunch = locateNodeLaunch(self, pathEnv, [](const std::string& candidate) {
      struct stat info {};
      return ::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(candidate.c_str(), X_OK) == 0;
    });
    // Not found: keep the first place looked, so the error names it.
    if (site.node.nodeLaunch.empty()) site.node.nodeLaunch = nodeLaunchCandidates(self, "").front();
  }
  char cwd[PATH_MAX];
  site.node.cwd = ::getcwd(cwd, sizeof cwd) != nullptr ? cwd : ".";
  site.inPath = [](const std::string& program) {
    const char* path = std::getenv("PATH");
    return !findInPath(program, path != nullptr ? path : "/usr/bin:/bin").empty();
  };
  return site;
}

}  // namespace dsrun::launcher
