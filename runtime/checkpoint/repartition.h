#pragma once
// Executes planRepartition on tensors: the saved flat partitions of N ranks in, one rank's partition
// under another plan out.

#include <ATen/core/Tensor.h>

#include <vector>

#include "runtime/checkpoint/repartition_plan.h"

namespace dsrt::checkpoint {

/// `targetRank`'s partition of `target` (target.partitionNumel elements, dtype of the inputs, padding
/// zero) built from `savedPartitions` (saved.worldSize 1-D tensors of saved.partitionNumel elements,
/// index = saved rank). Entries planRepartition does not reference may be undefined tensors, so a
/// caller can read only the files it needs. Throws CheckpointError on a count, size or dtype mismatch.
at::Tensor repartition(const std::vector<at::Tensor>& savedPartitions, const zero::PartitionPlan& saved,
                       const zero::PartitionPlan& target, int targetRank);

/// The saved ranks whose partitions repartition() reads for `targetRank`, ascending.
std::vector<int> sourceRanks(const zero::PartitionPlan& saved, const zero::PartitionPlan& target, int targetRank);

/// The whole unpadded flat buffer (saved.numel elements) from all saved partitions; what ds_to_fp32
/// cuts into parameters.
at::Tensor consolidateFlat(const std::vector<at::Tensor>& savedPartitions, const zero::PartitionPlan& saved);

}  // namespace dsrt::checkpoint
