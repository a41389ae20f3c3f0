#pragma once
// What checkpoints need from a strategy whose fp32 master parameters and optimizer state are cut into
// per-rank partitions by one PartitionPlan (ZeRO stages 1, 2 and 3, with or without offload): the plan,
// this rank's fp32 master partition, and a way to restore it. Checkpoint files store exactly these, so
// a checkpoint written under one plan re-partitions into another (runtime/checkpoint/repartition.h).

#include <ATen/core/Tensor.h>

#include "runtime/grad_strategy.h"
#include "runtime/zero/partition_plan.h"

namespace dsrt::zero {

class PartitionedStrategy : public GradStrategy {
 public:
  /// The layout every rank agrees on.
  virtual const PartitionPlan& plan() const = 0;
  /// This rank's fp32 master partition (plan().partitionNumel elements; what the optimizer updates).
  virtual at::Tensor masterPartition() const = 0;
  /// Replaces this rank's master partition with `fp32` (plan().partitionNumel elements) and makes the
  /// model's parameters agree with the masters of all ranks. Collective: every rank calls it.
  virtual void loadMasterPartition(const at::Tensor& fp32) = 0;
};

}  // namespace dsrt::zero
