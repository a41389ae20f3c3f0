#pragma once
// What ZeRO stages 1 and 2 share: the flat parameter buffer cut by a PartitionPlan, the optimizer over
// this rank's partition (optimizer state exists only for it: 1/N of it per rank), the bucketed
// reducer that averages gradients into the partition, the global gradient norm, and the step that
// updates the partition and all-gathers the others. The stages differ only in where gradients live
// (Stage1Optimizer: a full flat buffer, reduced at boundaries; Stage2Optimizer: only the partition,
// reduced every micro-step).

#include "runtime/grad_strategy.h"
#include "runtime/zero/partitioned_strategy.h"
#include "runtime/optim/flat_optimizer.h"
#include "runtime/zero/bucket_reducer.h"
#include "runtime/zero/flat_param_buffer.h"
#include "runtime/zero/grad_ready_hooks.h"
#include "runtime/zero/partition_plan.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>

namespace dsrt::zero {

/// Base of the ZeRO-1/2 strategies; see GradStrategy for the call sequence and threading.
class ZeroOptimizer : public PartitionedStrategy {
 public:
  double gradNorm() override;
  void step(double lr, double clipScale) override;
  optim::FlatOptimizer& optimizer() override { return *optimizer_; }
  /// Flat params (full, padded) + gradientBytes() + optimizer state of the partition, in bytes of the
  /// tensors actually held. Reduction buckets in flight are temporary buffers, not model state.
  int64_t modelStateBytes() const override;

  std::vector<at::Tensor> fullParams() override;
  void loadFullParams(const std::vector<at::Tensor>& full) override;

  /// The layout every rank agrees on (checkpoints re-partition through it).
  const PartitionPlan& plan() const override { return plan_; }
  at::Tensor masterPartition() const override { return paramPartition(); }
  void loadMasterPartition(const at::Tensor& fp32) override;
  /// This rank's partition of the flat parameters (what the optimizer updates).
  at::Tensor paramPartition() const { return flatParams_.partition(ctx_.rank); }
  /// This rank's averaged gradient partition (valid after endBackward(true)).
  virtual at::Tensor gradPartition() const = 0;

 protected:
  /// Lays out ctx.params, builds the optimizer over this rank's partition.
  explicit ZeroOptimizer(StrategyContext ctx);
  /// Bytes of the gradient tensors this stage holds.
  virtual int64_t gradientBytes() const = 0;
  /// Builds the reducer over `reduceBucketNumel` buckets with the stage's input/deliver callbacks.
  std::unique_ptr<BucketReducer> makeReducer(BucketIo io) const;

  StrategyContext ctx_;
  PartitionPlan plan_;
  FlatParamBuffer flatParams_;
  std::unique_ptr<optim::FlatOptimizer> optimizer_;
};

}  // namespace dsrt::zero
