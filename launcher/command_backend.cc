#include "launcher/command_backend.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>

#include "common/error.h"
#include "common/strings.h"
#include "launcher/command_job.h"
#include "launcher/node_launch_locator.h"

namespace dsrun {

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

std::optional<std::string> CommandBackend::unavailableReason() const {
  const std::string tool = requiredTool();
  if (!site_.inPath(tool)) return strCat("'", tool, "' not found in PATH");
  return std::nullopt;
}

std::vector<NodeCommand> CommandBackend::nodeCommands(const WorldPlan& plan, const LaunchContext& ctx) const {
  return {NodeCommand{plan.hosts.empty() ? std::string() : plan.hosts.front().host, buildCommand(plan, ctx).argv}};
}

int CommandBackend::run(const WorldPlan& plan, const LaunchContext& ctx) {
  if (::access(site_.node.nodeLaunch.c_str(), X_OK) != 0) {
    throw BackendUnavailable(std::string(name()), strCat("dsrun-launch not found at '", site_.node.nodeLaunch, "'"),
                             "install dsrun-launch next to dsrun, in ../lib/dsrun or in PATH, "
                             "or set DSRUN_LAUNCH to its path");
  }
  CommandJobSpec spec;
  spec.command = buildCommand(plan, ctx);
  spec.kill = killCommand(plan, ctx);
  if (signalCommand(plan, ctx, {SIGUSR1})) {
    spec.signal = [this, &plan, &ctx](const std::vector<int>& signals) { return *signalCommand(plan, ctx, signals); };
  }
  spec.stopSignal = stopSignal();
  spec.launch = ctx.options.launch;
  spec.program = ctx.options.userScript;
  for (const PlannedRank& r : plan.ranks) spec.rankHosts[r.rank] = r.host;
  beforeLaunch(plan, ctx);
  try {
    const CommandJobResult result = runCommandJob(spec);
    afterLaunch(plan, ctx);
    return result.exitCode;
  } catch (...) {
    afterLaunch(plan, ctx);
    throw;
  }
}

}  // namespace dsrun
