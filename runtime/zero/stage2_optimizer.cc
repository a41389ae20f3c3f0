#include "runtime/zero/stage2_optimizer.h"

#include <ATen/ATen.h>

namespace dsrt::zero {

Stage2Optimizer::Stage2Optimizer(StrategyContext ctx) : ZeroOptimizer(std::move(ctx)) {
  if (master_.offloaded()) {
    // ZeRO-Offload: each bucket's averaged run goes straight to the host fp32 gradient partition as it
    // arrives (DeepSpeed's async_accumulate_grad_in_cpu_via_gpu), so the device keeps no gradient
    // partition and the copies happen during backward, not at the step.
    gradPartition_ = master_.hostGrad();
    gradPartition_.zero_();
  } else {
    gradPartition_ = at::zeros({plan_.partitionNumel}, flatParams_.flat().options());
  }
  grads_ = std::make_unique<PartitionGradReducer>(ctx_, plan_, gradPartition_);
}

Stage2Optimizer::~Stage2Optimizer() = default;

void Stage2Optimizer::beginBackward(bool /*isBoundary*/) { grads_->beginBackward(); }

void Stage2Optimizer::endBackward(bool /*isBoundary*/) {
  // DeepSpeed reduces on every micro-step at stage 2 (reduce_ready_partitions_and_remove_grads with
  // partition_gradients), so gradient memory stays at the partition between boundaries as well.
  grads_->endBackward();
}

void Stage2Optimizer::zeroGrad() { grads_->zeroGrad(); }

int64_t Stage2Optimizer::gradientBytes() const {
  // With offload the gradient partition is host memory (MasterPartition::hostBytes counts it).
  return master_.offloaded() ? 0 : static_cast<int64_t>(gradPartition_.nbytes());
}

}  // namespace dsrt::zero
