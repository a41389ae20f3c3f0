#include "runtime/zero/partition_grad_reducer.h"

#include "runtime/zero/reduce_bucket_plan.h"
#include "runtime/zero/side_stream_copies.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>

#include <algorithm>

namespace dsrt::zero {

PartitionGradReducer::PartitionGradReducer(const StrategyContext& ctx, const PartitionPlan& plan, at::Tensor gradPartition)
    : params_(ctx.params), rank_(ctx.rank), plan_(plan), gradPartition_(std::move(gradPartition)) {
  TORCH_CHECK(gradPartition_.numel() == plan_.partitionNumel, "zero: gradient partition has ",
              gradPartition_.numel(), " elements, expected '", plan_.partitionNumel, "'");
  gradPartition_.zero_();
  staged_.assign(params_.size(), false);
  BucketIo io;
  io.input = [this](size_t b) { return launchInput(b); };
  io.deliver = [this](size_t b, const at::Tensor& averaged) { deliver(b, averaged); };
  // On the first micro-step after zeroGrad the partition holds zeros, so the sum of a bucket's copies can be
  // written straight into it instead of into a temporary that is then added (one pass over the run less).
  io.output = [this](size_t b) { return partitionFresh_ ? partitionRun(b) : at::Tensor(); };
  io.beforeReuse = [this] {
    if (download_) {
      download_->beforeReuse();
    }
  };
  const auto mode = ctx.reduceScatter ? ReduceMode::kReduceScatter : ReduceMode::kAllreduce;
  reducer_ = std::make_unique<BucketReducer>(ctx.pg, ctx.rank, ctx.worldSize,
                                             planReduceBuckets(plan_, ctx.reduceBucketNumel),
                                             static_cast<int64_t>(params_.size()), mode, ctx.overlapComm, std::move(io));
  if (ctx.commDtype) {
    reducer_->setCommDtype(*ctx.commDtype);
  }
  reducer_->setTimers(ctx.timers);
  reducer_->setCommsLog(ctx.commsLog);
  timers_ = ctx.timers;
  bucketOf_ = bucketOfParam(reducer_->buckets(), static_cast<int64_t>(params_.size()));
  staging_.resize(reducer_->buckets().size());
  stagingBase_.resize(reducer_->buckets().size());
  int64_t maxRunNumel = 0;
  for (const auto& b : reducer_->buckets()) {
    maxBucketNumel_ = std::max(maxBucketNumel_, b.numel());
    maxRunNumel = std::max(maxRunNumel, b.rankNumels[static_cast<size_t>(rank_)]);
  }
  // A host partition of a model on an accelerator: each averaged run is downloaded on a side stream
  // instead of by a blocking copy in backward (DeepSpeed's non_blocking copy into its pinned buffer).
  const c10::Device device = params_.empty() ? c10::Device(c10::kCPU) : params_.front().device();
  if (gradPartition_.device().is_cpu() && !device.is_cpu()) {
    download_ = std::make_unique<HostGradDownload>(std::make_unique<SideStreamCopies>(device), maxRunNumel);
  } else if (gradPartition_.device().is_cpu() && ctx.testStreams != nullptr && ctx.offloadOptimizer) {
    download_ = std::make_unique<HostGradDownload>(
        std::make_unique<SideStreamCopies>(ctx.testStreams->compute, ctx.testStreams->download), maxRunNumel);
  }
  for (const auto& p : params_) {
    p.mutable_grad().reset();
  }
  hooks_ = std::make_unique<GradReadyHooks>(params_, [this](int64_t i) { onGradReady(i); });
}

PartitionGradReducer::~PartitionGradReducer() = default;

at::Tensor PartitionGradReducer::stagingFor(size_t bucket) {
  if (!staging_[bucket].defined()) {
    // Two buffers suffice when gradients arrive in reverse order (one filling, one in flight).
    while (freeStaging_.empty() && reducer_->completeOldest()) {
    }
    if (freeStaging_.empty()) {
      freeStaging_.push_back(at::empty({maxBucketNumel_}, params_.front().options()));
    } else if (download_) {
      download_->beforeReuse();  // a recycled buffer: its last run may still be on its way to the host
    }
    stagingBase_[bucket] = std::move(freeStaging_.back());
    freeStaging_.pop_back();
    staging_[bucket] = stagingBase_[bucket].narrow(0, 0, reducer_->buckets()[bucket].numel());
  }
  return staging_[bucket];
}

void PartitionGradReducer::onGradReady(int64_t param) {
  if (!inBackward_) {
    return;  // a backward outside the engine: the gradient stays in .grad and joins the next micro-step
  }
  const auto i = static_cast<size_t>(param);
  const auto b = static_cast<size_t>(bucketOf_[i]);
  at::Tensor& grad = params_[i].mutable_grad();
  at::Tensor dst =
      stagingFor(b).narrow(0, plan_.paramOffsets[i] - reducer_->buckets()[b].flatBegin, plan_.paramNumels[i]);
  c10::AutoGradMode noGrad(false);
  {
    EngineTimers::MaybeScope timed(timers_, EngineTimers::kGradCopy);
    if (grad.defined()) {
      dst.copy_(grad.reshape({-1}));
    } else {
      dst.zero_();
    }
  }
  grad.reset();  // the full gradient is gone: only the staging copy exists until the bucket is reduced
  staged_[i] = true;
  reducer_->markReady(param);
}

at::Tensor PartitionGradReducer::launchInput(size_t bucket) {
  const ReduceBucket& b = reducer_->buckets()[bucket];
  at::Tensor staging = stagingFor(bucket);
  c10::AutoGradMode noGrad(false);
  for (int64_t p = b.firstParam; p < b.endParam; ++p) {
    const auto i = static_cast<size_t>(p);
    if (!staged_[i]) {  // unused in this forward: a zero gradient
      staging.narrow(0, plan_.paramOffsets[i] - b.flatBegin, plan_.paramNumels[i]).zero_();
    }
  }
  if (b.flatEnd > plan_.numel) {
    const int64_t padBegin = std::max(plan_.numel, b.flatBegin);
    staging.narrow(0, padBegin - b.flatBegin, b.flatEnd - padBegin).zero_();
  }
  return staging;
}

at::Tensor PartitionGradReducer::partitionRun(size_t bucket) const {
  const ReduceBucket& b = reducer_->buckets()[bucket];
  const int64_t run = b.rankNumels[static_cast<size_t>(rank_)];
  if (run == 0) {
    return gradPartition_.narrow(0, 0, 0);  // a bucket wholly outside this rank's partition
  }
  return gradPartition_.narrow(0, b.flatBegin + b.rankOffset(rank_) - plan_.partitionBegin(rank_), run);
}

void PartitionGradReducer::deliver(size_t bucket, const at::Tensor& averaged) {
  c10::AutoGradMode noGrad(false);
  at::Tensor run = partitionRun(bucket);
  if (averaged.numel() > 0 && averaged.data_ptr() != run.data_ptr()) {
    if (download_) {
      // Zeros since zeroGrad: the run is the download itself; otherwise it is added to what is there.
      download_->deliver(run, averaged, /*accumulate=*/!partitionFresh_);
    } else {
      run.add_(averaged);  // the same device (download_ covers a host partition of a device model)
    }
  }
  freeStaging_.push_back(std::move(stagingBase_[bucket]));
  staging_[bucket] = at::Tensor();
}

void PartitionGradReducer::endBackward() {
  reducer_->flush();
  partitionFresh_ = false;  // the next micro-step of this window accumulates
  std::fill(staged_.begin(), staged_.end(), false);
  inBackward_ = false;
}

const at::Tensor& PartitionGradReducer::gradPartition() const {
  if (download_) {
    download_->awaitHost();
  }
  return gradPartition_;
}

void PartitionGradReducer::zeroGrad() {
  c10::AutoGradMode noGrad(false);
  if (download_) {
    download_->awaitHost();  // a download in flight would land on the zeros
  }
  gradPartition_.zero_();
  partitionFresh_ = true;
  for (const auto& p : params_) {
    p.mutable_grad().reset();
  }
}

}  // namespace dsrt::zero
