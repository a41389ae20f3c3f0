#pragma once
// ZeRO stage 3 (DeepSpeed's stage3.py): the parameters themselves are partitioned. Each rank holds
// only its partition of the flat layout in the model's dtype (the same PartitionPlan as stages 1 and
// 2), its gradient partition, the fp32 master of its partition (the partition itself for an fp32 model:
// what the optimizer updates and checkpoints save), the optimizer state of the partition, and the full
// data of persistent parameters (numel <= stage3_param_persistence_threshold). Every other
// parameter's data is an empty tensor except while its module runs (dsrt::zero::forward gathers it:
// Stage3ParamCoordinator). Gradients are reduce-scattered into the partitions as they become final
// (PartitionGradReducer), every micro-step.
// offload_optimizer (MasterPartition): the fp32 master, the gradient partition and the optimizer
// state live in host memory and the step runs there; the partition receives the updated values.
// offload_param (with offload_optimizer): the partition itself lives in host memory too; gathers copy
// from it to the model's device, on a side stream when they are launched (prefetches: ahead of use).

#include "runtime/zero/master_partition.h"
#include "runtime/zero/partitioned_strategy.h"
#include "runtime/zero/partition_grad_reducer.h"
#include "runtime/zero/stage3_param_coordinator.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

namespace dsrt::zero {

/// See GradStrategy for the call sequence and threading.
class Stage3Strategy : public PartitionedStrategy {
 public:
  /// Copies this rank's partition out of ctx.params (full, identical on every rank), then releases
  /// every non-persistent parameter. Parameters are fp32, fp16 or bf16 (all alike): the partition and
  /// the gradient partition take their dtype, the optimizer steps an fp32 master (MasterPartition).
  /// Throws c10::Error for other dtypes or a bad factory.
  explicit Stage3Strategy(StrategyContext ctx);
  ~Stage3Strategy() override;

  void beginBackward(bool isBoundary) override;
  void endBackward(bool isBoundary) override;
  double gradNorm() override;
  /// fp16: the gradient partition holds inf or NaN (local).
  bool hasOverflow() override;
  /// Updates the partition; re-gathers only the persistent parameters (the others are gathered when
  /// next used).
  void step(double lr, double clipScale) override;
  void zeroGrad() override;
  optim::FlatOptimizer& optimizer() override { return *optimizer_; }
  /// 4 bytes x (parameter partition + gradient partition) + optimizer state + persistent parameters'
  /// full data: (4 + 4 + 8) Psi / N + persistent for Adam. With offload_optimizer the optimizer state
  /// is in offloadedStateBytes() instead.
  int64_t modelStateBytes() const override;
  /// offload_optimizer: the host fp32 master and gradient partitions plus the optimizer state (and the
  /// parameter partition with offload_param); else 0.
  int64_t offloadedStateBytes() const override;
  /// Collective: all-gathers every partition into fresh full tensors (the model stays released).
  std::vector<at::Tensor> fullParams() override;
  /// Takes this rank's partition from `full`, then re-gathers the persistent parameters. Collective.
  void loadFullParams(const std::vector<at::Tensor>& full) override;

  const PartitionPlan& plan() const override { return plan_; }
  /// The fp32 master: the parameter partition itself, or its host copy with offload_optimizer.
  at::Tensor masterPartition() const override;
  void loadMasterPartition(const at::Tensor& fp32) override;

  const at::Tensor& gradPartition() const { return grads_->gradPartition(); }
  /// Parameter `param`'s run in this rank's master, parameter and gradient partitions (partition_fragment.h).
  ParamFragment fragment(int64_t param) const override;
  const Stage3ParamCoordinator& coordinator() const { return *coordinator_; }

 private:
  StrategyContext ctx_;
  PartitionPlan plan_;
  std::vector<std::vector<int64_t>> shapes_;  ///< full parameter shapes (released data is empty)
  at::Tensor partition_;  ///< plan_.partitionNumel, model dtype: this rank's parameters (gathers read it)
  std::unique_ptr<MasterPartition> master_;  ///< aliases partition_ unless offload_optimizer
  std::unique_ptr<optim::FlatOptimizer> optimizer_;
  std::unique_ptr<PartitionGradReducer> grads_;
  std::unique_ptr<Stage3ParamCoordinator> coordinator_;  ///< last: releases the parameters
};

}  // namespace dsrt::zero
