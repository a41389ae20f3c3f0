#pragma once
// ZeRO stage 2: optimizer state and gradients are partitioned. As each parameter's gradient becomes
// final, the autograd hook copies it into its bucket's staging buffer and frees it (this is what saves
// the memory); full buckets are reduce-scattered during backward and this rank adds its averaged run
// into its gradient partition. As in DeepSpeed, this happens on every micro-step, also between
// accumulation boundaries, so a rank never holds more than its partition plus the buckets in flight.

#include "runtime/zero/zero_optimizer.h"

#include <memory>
#include <vector>

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
  at::Tensor gradPartition() const override { return gradPartition_; }

 protected:
  int64_t gradientBytes() const override;

 private:
  void onGradReady(int64_t param);
  at::Tensor stagingFor(size_t bucket);
  at::Tensor launchInput(size_t bucket);
  void deliver(size_t bucket, const at::Tensor& averaged);

  at::Tensor gradPartition_;               ///< plan_.partitionNumel, accumulated across micro-steps
                                           ///< (model dtype on the device; fp32 host memory with offload)
  std::vector<bool> staged_;               ///< per parameter: copied into staging this micro-step
  std::vector<int64_t> bucketOf_;          ///< per parameter: its bucket
  std::vector<at::Tensor> staging_;        ///< per bucket: its staging buffer while filling or in flight
  std::vector<at::Tensor> stagingBase_;    ///< per bucket: the recyclable buffer staging_ views
  std::vector<at::Tensor> freeStaging_;    ///< recycled buffers of maxBucketNumel_ elements
  int64_t maxBucketNumel_ = 0;
  bool inBackward_ = false;
  std::unique_ptr<BucketReducer> reducer_;
  std::unique_ptr<GradReadyHooks> hooks_;  ///< last: destroyed first, so no hook sees a dead reducer
};

}  // namespace dsrt::zero
