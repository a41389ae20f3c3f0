#pragma once
// The restrictions DeepSpeed's MPI runners impose (validate_args and get_cmd), shared by the openmpi,
// mpich, impi and mvapich backends.

#include <string>

#include "launcher/options.h"
#include "launcher/world_plan.h"

namespace dsrun::launcher {

/// Throws ConfigError "<backend> backend does not support worker include/exclusion" for --include or
/// --exclude, and "... does not support limiting num nodes/gpus" for --num_nodes or --num_gpus.
void rejectResourceFilters(const std::string& backend, const Options& options);

/// The slots per host, which must be the same on every host; throws ConfigError "<what> requires same
/// number of devices per node (HOST: N, HOST: M)" otherwise.
int sameSlotsPerNode(const WorldPlan& plan, const std::string& what);

/// Comma-separated active host names, in plan order.
std::string hostList(const WorldPlan& plan);

}  // namespace dsrun::launcher
