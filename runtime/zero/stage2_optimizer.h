#pragma once
// ZeRO stage 2: optimizer state and gradients are partitioned. As each parameter's gradient becomes
// final, the autograd hook copies it into its bucket's staging buffer and frees it (this is what saves
// the memory); full buckets are reduce-scattered during backward and this rank adds its averaged run
// into its gradient partition. As in DeepSpeed, this happens on every micro-step, also between
// accumulation boundaries, so a rank never holds more than its partition plus the buckets in flight.

#include "runtime/zero/partition_grad_reducer.h"
#include "runtime/zero/zero_optimizer.h"

#include <memory>

namespace dsrt::zero {

/// See ZeroOptimizer and GradStrategy for the contract. Parameters' .grad is undefined outside
/// backward; the gradient lives in gradPartition() only.
class Stage2Optimizer : public ZeroOptimizer {
 public:
  explicit Stage2Optimizer(StrategyContext ctx);
  ~Stage2Optimizer() override;

  void beginBackward(bool isBoundary) override;
  void endBackward(bool isBoundary) override;
  void zeroGrad() override;
  /// With offload on an accelerator, waits for the runs still on their way to host memory.
  at::Tensor gradPartition() const override { return grads_->gradPartition(); }

 protected:
  int64_t gradientBytes() const override;

 private:
  at::Tensor gradPartition_;                     ///< plan_.partitionNumel, accumulated across micro-steps
                                                 ///< (model dtype on the device; fp32 host memory with offload)
  std::unique_ptr<PartitionGradReducer> grads_;  ///< staging, bucketed reduce-scatter into gradPartition_
};

}  // namespace dsrt::zero
