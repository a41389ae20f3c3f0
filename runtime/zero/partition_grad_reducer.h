#pragma once
// The gradient path of ZeRO stages 2 and 3: when a parameter's gradient is final (post hook on its grad
// accumulator; at stage 3 it runs while the parameter is still gathered), it is copied into its reduction
// bucket's staging buffer and p.grad is freed; full buckets are reduce-scattered (BucketReducer) and
// this rank adds its averaged run into its fp32 gradient partition. Runs on every micro-step, so a
// rank holds only its gradient partition plus the buckets in flight. With offload on an accelerator the
// partition is host memory and the runs reach it through HostGradDownload, with no host wait in backward.

#include "runtime/grad_strategy.h"
#include "runtime/zero/bucket_reducer.h"
#include "runtime/zero/grad_ready_hooks.h"
#include "runtime/zero/host_grad_download.h"
#include "runtime/zero/partition_plan.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace dsrt::zero {

/// Not thread-safe (CPU backward runs hooks on the calling thread). Collective through BucketReducer.
class PartitionGradReducer {
 public:
  /// Builds the hooks now: construct it while the parameters still hold their full data (the grad
  /// accumulators record the parameters' shapes). `gradPartition` (plan.partitionNumel elements, any
  /// floating dtype and device: the model's dtype, or the host fp32 buffer of offload_optimizer)
  /// receives this rank's averaged runs; staging buffers take the parameters' dtype, and the
  /// collective runs in ctx.commDtype when set. A host partition of a model on an accelerator (or of an
  /// offloaded CPU model given ctx.testStreams) receives them through a side stream (HostGradDownload).
  PartitionGradReducer(const StrategyContext& ctx, const PartitionPlan& plan, at::Tensor gradPartition);
  ~PartitionGradReducer();
  PartitionGradReducer(const PartitionGradReducer&) = delete;
  PartitionGradReducer& operator=(const PartitionGradReducer&) = delete;

  void beginBackward() { inBackward_ = true; }
  /// Reduces whatever is left (unused parameters count as zeros) and waits for every bucket.
  void endBackward();
  /// Zeroes the partition (after the downloads in flight).
  void zeroGrad();
  /// plan.partitionNumel elements, accumulated across micro-steps, complete: a host partition fed by
  /// downloads is waited for here (the one host wait of an offloaded step's gradients).
  const at::Tensor& gradPartition() const;

 private:
  void onGradReady(int64_t param);
  at::Tensor stagingFor(size_t bucket);
  at::Tensor launchInput(size_t bucket);
  void deliver(size_t bucket, const at::Tensor& averaged);
  /// This rank's run of `bucket` in gradPartition_.
  at::Tensor partitionRun(size_t bucket) const;

  std::vector<at::Tensor> params_;
  int rank_;
  const PartitionPlan& plan_;
  at::Tensor gradPartition_;
  std::vector<bool> staged_;             ///< per parameter: copied into staging this micro-step
  std::vector<int64_t> bucketOf_;        ///< per parameter: its bucket
  std::vector<at::Tensor> staging_;      ///< per bucket: staging view while filling or in flight
  std::vector<at::Tensor> stagingBase_;  ///< per bucket: the recyclable buffer staging_ views
  std::vector<at::Tensor> freeStaging_;  ///< recycled buffers of maxBucketNumel_ elements
  int64_t maxBucketNumel_ = 0;
  bool inBackward_ = false;
  bool partitionFresh_ = true;  ///< gradPartition_ is all zeros (since zeroGrad, before any micro-step ended)
  EngineTimers* timers_ = nullptr;  ///< wall_clock_breakdown (kGradCopy for staging copies); may be null
  std::unique_ptr<BucketReducer> reducer_;
  /// Null unless the runs travel to host memory on a side stream; destroyed before the reducer's buffers,
  /// which its downloads may still read.
  std::unique_ptr<HostGradDownload> download_;
  std::unique_ptr<GradReadyHooks> hooks_;  ///< last: destroyed first, so no hook sees a dead reducer
};

}  // namespace dsrt::zero
