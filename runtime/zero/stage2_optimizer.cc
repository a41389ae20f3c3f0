#include "runtime/zero/stage2_optimizer.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>

#include <algorithm>

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
  staged_.assign(ctx_.params.size(), false);
  BucketIo io;
  io.input = [this](size_t b) { return launchInput(b); };
  io.deliver = [this](size_t b, const at::Tensor& averaged) { deliver(b, averaged); };
  reducer_ = makeReducer(std::move(io));
  bucketOf_ = bucketOfParam(reducer_->buckets(), static_cast<int64_t>(ctx_.params.size()));
  staging_.resize(reducer_->buckets().size());
  stagingBase_.resize(reducer_->buckets().size());
  for (const auto& b : reducer_->buckets()) {
    maxBucketNumel_ = std::max(maxBucketNumel_, b.numel());
  }
  for (const auto& p : ctx_.params) {
    p.mutable_grad().reset();
  }
  hooks_ = std::make_unique<GradReadyHooks>(ctx_.params, [this](int64_t i) { onGradReady(i); });
}

Stage2Optimizer::~Stage2Optimizer() = default;

at::Tensor Stage2Optimizer::stagingFor(size_t bucket) {
  if (!staging_[bucket].defined()) {
    // Two buffers suffice when gradients arrive in reverse order (one filling, one in flight); an
    // out-of-order backward first drains the oldest reduction, and allocates only if none is pending.
    while (freeStaging_.empty() && reducer_->completeOldest()) {
    }
    if (freeStaging_.empty()) {
      freeStaging_.push_back(at::empty({maxBucketNumel_}, flatParams_.flat().options()));
    }
    stagingBase_[bucket] = std::move(freeStaging_.back());
    freeStaging_.pop_back();
    staging_[bucket] = stagingBase_[bucket].narrow(0, 0, reducer_->buckets()[bucket].numel());
  }
  return staging_[bucket];
}

void Stage2Optimizer::onGradReady(int64_t param) {
  if (!inBackward_) {
    return;  // a backward outside the engine: the gradient stays in .grad and joins the next micro-step
  }
  const auto i = static_cast<size_t>(param);
  const auto b = static_cast<size_t>(bucketOf_[i]);
  at::Tensor& grad = ctx_.params[i].mutable_grad();
  at::Tensor dst =
      stagingFor(b).narrow(0, plan_.paramOffsets[i] - reducer_->buckets()[b].flatBegin, plan_.paramNumels[i]);
  c10::AutoGradMode noGrad(false);
  if (grad.defined()) {
    dst.view(grad.sizes()).copy_(grad);
  } else {
    dst.zero_();
  }
  grad.reset();  // the full gradient is gone: from here on only the staging copy exists
  staged_[i] = true;
  reducer_->markReady(param);
}

at::Tensor Stage2Optimizer::launchInput(size_t bucket) {
  const ReduceBucket& b = reducer_->buckets()[bucket];
  at::Tensor staging = stagingFor(bucket);
  c10::AutoGradMode noGrad(false);
  // Parameters whose hook did not fire (unused in this forward) count as zero gradients.
  for (int64_t p = b.firstParam; p < b.endParam; ++p) {
    const auto i = static_cast<size_t>(p);
    if (!staged_[i]) {
      staging.narrow(0, plan_.paramOffsets[i] - b.flatBegin, plan_.paramNumels[i]).zero_();
    }
  }
  if (b.flatEnd > plan_.numel) {
    const int64_t padBegin = std::max(plan_.numel, b.flatBegin);
    staging.narrow(0, padBegin - b.flatBegin, b.flatEnd - padBegin).zero_();
  }
  return staging;
}

void Stage2Optimizer::deliver(size_t bucket, const at::Tensor& averaged) {
  const ReduceBucket& b = reducer_->buckets()[bucket];
  const int64_t offset = b.flatBegin + b.rankOffset(ctx_.rank) - plan_.partitionBegin(ctx_.rank);
  c10::AutoGradMode noGrad(false);
  if (averaged.numel() > 0) {
    at::Tensor run = gradPartition_.narrow(0, offset, averaged.numel());
    run.add_(averaged.device() == run.device() ? averaged : averaged.to(run.device()));
  }
  freeStaging_.push_back(std::move(stagingBase_[bucket]));
  staging_[bucket] = at::Tensor();
}

void Stage2Optimizer::beginBackward(bool /*isBoundary*/) {
  inBackward_ = true;
}

void Stage2Optimizer::endBackward(bool /*isBoundary*/) {
  // DeepSpeed reduces on every micro-step at stage 2 (reduce_ready_partitions_and_remove_grads with
  // partition_gradients), so gradient memory stays at the partition between boundaries as well.
  reducer_->flush();
  std::fill(staged_.begin(), staged_.end(), false);
  inBackward_ = false;
}

void Stage2Optimizer::zeroGrad() {
  c10::AutoGradMode noGrad(false);
  gradPartition_.zero_();
  for (const auto& p : ctx_.params) {
    p.mutable_grad().reset();
  }
}

int64_t Stage2Optimizer::gradientBytes() const {
  // With offload the gradient partition is host memory (MasterPartition::hostBytes counts it).
  return master_.offloaded() ? 0 : static_cast<int64_t>(gradPartition_.nbytes());
}

}  // namespace dsrt::zero
