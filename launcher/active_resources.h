#pragma once
// Which hosts and slots a job uses: the hostfile (or this machine in local mode) narrowed by
// CUDA_VISIBLE_DEVICES, --include/--exclude, --num_nodes and --num_gpus, in runner.py's order.

#include <optional>
#include <string>
#include <vector>

#include "launcher/environment.h"
#include "launcher/hostfile.h"
#include "launcher/options.h"
#include "launcher/resource_spec.h"

namespace dsrun::launcher {

/// Host name of the implicit pool in local mode (no hostfile).
inline constexpr const char* kLocalHost = "localhost";

/// The resolved selection.
struct ActiveResources {
  ResourcePool hosts;              ///< hosts in hostfile order, each with the slots it runs
  bool fromHostfile = false;       ///< false: local mode (no hostfile; one implicit "localhost")
  std::vector<std::string> notes;  ///< things worth telling the user (one line each), e.g. ignored settings
};

/// Resolves the selection. `hostfile` is nullopt in local mode, where the pool is `localhost` with
/// --num_gpus slots if given, else `gpuCount` (at least 1). In local mode a non-empty CUDA_VISIBLE_DEVICES
/// in `launcherEnv` becomes `--include localhost:<ids>` unless a selection flag is given, as in DeepSpeed.
/// Throws ConfigError/ParseError naming the flag (and the valid choices) for conflicting flags, unknown
/// hosts or slots, an empty result, --num_nodes > 1 without a hostfile and --num_gpus above a host's slots.
ActiveResources resolveActiveResources(const Options& options, const std::optional<Hostfile>& hostfile,
                                       int gpuCount, const EnvMap& launcherEnv);

}  // namespace dsrun::launcher
