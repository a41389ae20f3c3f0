#pragma once
// --dry_run: the resolved plan as one JSON object.

#include <string>
#include <vector>

#include "launcher/backend.h"
#include "launcher/world_plan.h"

namespace dsrun::launcher {

/// {"world_info": {HOST: [slot, ...]} (hostfile order), "master_addr", "master_addr_inferred_from" (only when a
///  launch would infer it: the host), "master_port", "launcher", "ranks": [{"rank", "local_rank", "host", "slot",
///  "env": {...}, "argv": [...], "cores": "0-3" (only with binding)}], "node_commands": [{"host", "argv"}],
///  then each of `sections` (the backend's: Backend::dryRunSections), then "elastic" for an elastic job},
/// indented by 2. Invalid UTF-8 in a value is replaced by U+FFFD (JSON cannot carry raw bytes); everything
/// else is verbatim.
std::string dryRunJson(const WorldPlan& plan, const std::vector<NodeCommand>& nodeCommands,
                       const std::vector<DryRunSection>& sections = {});

}  // namespace dsrun::launcher
