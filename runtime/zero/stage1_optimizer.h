#pragma once
// ZeRO stage 1: the optimizer state is partitioned, gradients are not. Every parameter's .grad is a
// view of one full flat gradient buffer, so micro-steps accumulate into it with no copy and no
// communication; on the boundary micro-step the autograd hooks launch each bucket's reduction as its
// gradients become final, and this rank keeps the averaged values of its own partition.

#include "runtime/zero/zero_optimizer.h"

#include <memory>

namespace dsrt::zero {

/// See ZeroOptimizer and GradStrategy for the contract. After endBackward(true) only the partition
/// range of the flat gradient is the averaged gradient with reduce_scatter (with allreduce, all of it).
class Stage1Optimizer : public ZeroOptimizer {
 public:
  explicit Stage1Optimizer(StrategyContext ctx);
  ~Stage1Optimizer() override;

  void beginBackward(bool isBoundary) override;
  void endBackward(bool isBoundary) override;
  void zeroGrad() override;
  at::Tensor gradPartition() const override;

 protected:
  int64_t gradientBytes() const override;

 private:
  void onGradReady(int64_t param);

  at::Tensor flatGrads_;                     ///< plan_.paddedNumel; each param's .grad is a view of it
  bool reducing_ = false;                    ///< inside the backward of a boundary micro-step
  std::unique_ptr<BucketReducer> reducer_;   ///< buckets are ranges of flatGrads_
  std::unique_ptr<GradReadyHooks> hooks_;    ///< last: destroyed first, so no hook sees a dead reducer
};

}  // namespace dsrt::zero
