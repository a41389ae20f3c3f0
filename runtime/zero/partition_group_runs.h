#pragma once
// The torch param-group runs of one rank's ZeRO partition: which group owns each stretch of the flat
// partition its optimizer steps (a parameter may straddle two partitions, so a group may too).
// Torch-free, like the planner it reads.

#include <vector>

#include "runtime/optim/param_groups.h"
#include "runtime/zero/partition_plan.h"

namespace dsrt::zero {

/// The runs of `rank`'s partition, offsets relative to its first element, for
/// FlatOptimizer::setGroupRuns. `groupOfParam`: one group index per parameter of the plan.
/// Throws std::invalid_argument when its size differs from the plan's parameter count.
std::vector<optim::GroupRun> partitionGroupRuns(const PartitionPlan& plan, int rank,
                                                const std::vector<int>& groupOfParam);

}  // namespace dsrt::zero
