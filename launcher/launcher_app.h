#pragma once
// The `dsrun` command as a function: parse -> plan -> --dry_run JSON or backend run. main.cc wraps it
// with the real machine and error printing; tests drive it with FakeMachine and fake backends.

#include <ostream>
#include <string>
#include <vector>

#include "launcher/backend_registry.h"
#include "launcher/machine.h"
#include "launcher/options.h"
#include "launcher/world_plan.h"

namespace dsrun::launcher {

/// Reads what planWorld needs from `machine`: the hostfile (a missing -H file is an IoError; a missing
/// default /job/hostfile means local mode; a present one must parse), the .deepspeed_env files that
/// exist, the environment, GPU and core counts, and a fresh job id.
PlanInputs gatherPlanInputs(const Options& options, const Machine& machine);

/// Runs dsrun with `args` (no argv[0]). --help/--version/--dry_run print to `out` and return 0; otherwise
/// the chosen backend runs the job and its exit code is returned. Throws dsrun::Error for every user
/// error (nothing is printed on `out` then).
int runDsrun(const std::vector<std::string>& args, Machine& machine, const BackendRegistry& registry,
             std::ostream& out);

}  // namespace dsrun::launcher
