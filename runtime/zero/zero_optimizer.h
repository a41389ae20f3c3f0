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
#include "runtime/zero/master_partition.h"
#include "runtime/zero/partition_plan.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>

namespace dsrt::zero {

/// Base of the ZeRO-1/2 strategies; see GradStrategy for the call sequence and threading.
class ZeroOptimizer : public PartitionedStrategy {
 public:
  double gradNorm() override;
  /// Updates this rank's partition and all-gathers the others in allgather_bucket_size shards. With more
  /// than one shard the update runs shard by shard and each shard's exchange is posted as soon as it is
  /// final, so the all-gather overlaps the rest of the optimizer step; the values are the same bit for bit.
  void step(double lr, double clipScale) override;
  optim::FlatOptimizer& optimizer() override { return *optimizer_; }
  /// Bytes on the model's device: flat params (full, padded, model dtype) + gradientBytes() + the fp32
  /// master partition and optimizer state unless offloaded. Reduction buckets in flight and the fp32
  /// gradient copy a mixed-precision step makes are temporary buffers, not model state.
  int64_t modelStateBytes() const override;
  /// ZeRO-Offload: host bytes of the fp32 master partition, the fp32 gradient partition and the
  /// optimizer state; 0 without offload.
  int64_t offloadedStateBytes() const override;
  /// inf/NaN in this rank's averaged gradient partition (DeepSpeed's has_overflow_partitioned_grads_serial).
  bool hasOverflow() override;

  /// fp32 values of every parameter: the model's own when it is fp32 and not offloaded, else the fp32
  /// masters of all ranks, all-gathered (collective then), so checkpoints keep full precision.
  std::vector<at::Tensor> fullParams() override;
  void loadFullParams(const std::vector<at::Tensor>& full) override;

  /// The layout every rank agrees on (checkpoints re-partition through it).
  const PartitionPlan& plan() const override { return plan_; }
  /// The fp32 master partition (the model's own partition for an fp32 model without offload).
  at::Tensor masterPartition() const override { return master_.master(); }
  void loadMasterPartition(const at::Tensor& fp32) override;
  /// This rank's partition of the flat parameters, in the model's dtype.
  at::Tensor paramPartition() const { return flatParams_.partition(ctx_.rank); }
  /// This rank's averaged gradient partition (valid after endBackward(true)).
  virtual at::Tensor gradPartition() const = 0;
  /// Parameter `param`'s run in this rank's master, model and gradient partitions (partition_fragment.h).
  ParamFragment fragment(int64_t param) const override;
  /// ctx.trackUnusedParameters: this rank's partition's parameters without a gradient since the last step.
  std::vector<int64_t> unusedParameters() const override;

 protected:
  /// Lays out ctx.params, builds the optimizer over this rank's partition.
  explicit ZeroOptimizer(StrategyContext ctx);
  /// Bytes of the gradient tensors this stage holds.
  virtual int64_t gradientBytes() const = 0;
  /// Builds the reducer over `reduceBucketNumel` buckets with the stage's input/deliver callbacks.
  std::unique_ptr<BucketReducer> makeReducer(BucketIo io) const;
  /// Makes every rank's flat parameters whole again after each rank updated its own partition.
  void allgatherModel();
  /// The flat parameters as the all-gather moves them (bf16 as fp16 bit patterns: Gloo has no bf16).
  at::Tensor allgatherView() const;

  StrategyContext ctx_;
  PartitionPlan plan_;
  FlatParamBuffer flatParams_;
  MasterPartition master_;  ///< what the optimizer updates (fp32; host memory with offload)
  std::unique_ptr<optim::FlatOptimizer> optimizer_;

 private:
  std::vector<char> gotGradient_;  ///< per parameter, since the last step (ctx.trackUnusedParameters only)
  std::unique_ptr<GradReadyHooks> gradientSeen_;  ///< last: its hooks go before what they record into
};

}  // namespace dsrt::zero
