#pragma once
// The ParamFragment of one parameter under a PartitionPlan (ZeRO stages 1, 2 and 3): the run of the
// parameter inside this rank's partition, as views of the partition-sized tensors the strategy keeps.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "runtime/param_fragment.h"
#include "runtime/zero/partition_plan.h"

namespace dsrt::zero {

/// The partition tensors a fragment is cut from, each plan.partitionNumel elements (grad may be undefined).
struct PartitionTensors {
  at::Tensor master;  ///< fp32, what the optimizer updates
  at::Tensor model;   ///< model dtype
  at::Tensor grad;    ///< averaged gradient partition
};

/// `param`'s fragment on `rank`: numel 0 (empty views) when the parameter lies in other ranks' partitions.
/// A parameter's elements inside one partition are contiguous, so there is at most one run.
ParamFragment partitionFragment(const PartitionPlan& plan, int rank, int64_t param, std::vector<int64_t> shape,
                                const PartitionTensors& tensors);

}  // namespace dsrt::zero
