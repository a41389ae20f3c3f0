#pragma once
// Test helpers: a WorldPlan made by the real planner from a hostfile and a dsrun command line, and a
// LaunchContext around it, with fixed paths, pid and job id so backend argv can be compared to tables.

#include <memory>
#include <string>
#include <vector>

#include "launcher/backend.h"
#include "launcher/backends/command/command_backend.h"
#include "launcher/hostfile.h"
#include "launcher/options.h"
#include "launcher/world_plan.h"

namespace dsrun::launcher::test {

/// Everything a backend call needs; keeps the Options and env alive for the LaunchContext.
struct PlanFixture {
  Options options;
  EnvMap env;
  WorldPlan plan;
  std::unique_ptr<LaunchContext> ctx;
};

inline std::unique_ptr<PlanFixture> makePlan(const std::string& hostfile, std::vector<std::string> args,
                                             EnvMap env = {{"PATH", "/usr/bin"}}) {
  auto f = std::make_unique<PlanFixture>();
  args.insert(args.begin(), {"-H", "/job/hostfile"});
  f->options = parseOptions(args);
  f->env = env;
  PlanInputs inputs;
  inputs.hostfile = parseHostfile(hostfile, "/job/hostfile");
  inputs.launcherEnv = env;
  inputs.cwd = "/work/job";
  inputs.physicalCores = 8;
  inputs.jobId = "job-1";
  f->plan = planWorld(f->options, inputs, Rendezvous{"10.0.0.1", std::nullopt});
  f->ctx = std::make_unique<LaunchContext>(LaunchContext{f->options, f->env, 777});
  return f;
}

/// A site with dsrun-launch at /opt/dsrun/bin/dsrun-launch, launched from /work/job; every tool in PATH
/// except those named in `missing`.
inline BackendSite fakeSite(std::vector<std::string> missing = {}) {
  BackendSite site;
  site.node = NodeSite{"/opt/dsrun/bin/dsrun-launch", "/work/job"};
  site.inPath = [missing](const std::string& tool) {
    for (const std::string& m : missing) {
      if (m == tool) return false;
    }
    return true;
  };
  return site;
}

inline const char* const kTwoWorkers = "worker-0 slots=4\nworker-1 slots=4\n";

}  // namespace dsrun::launcher::test
