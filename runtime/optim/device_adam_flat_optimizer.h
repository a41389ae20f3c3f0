#pragma once
// Adam and AdamW over one flat fp32 tensor on any device, as a few ATen kernels per param-group run (never
// one per parameter): ATen's fused Adam/AdamW kernel where this LibTorch has one for the device, tensor ops
// on the run's slices otherwise and whenever bias correction is off (the fused kernels always correct).
// The GPU path of ZeRO and DDP; CI runs the same code on CPU tensors (OptimizerSpec::deviceKernels).

#include "runtime/optim/flat_optimizer.h"

namespace dsrt::optim {

/// See FlatOptimizer. State: exp_avg and exp_avg_sq (fp32, numel each, zero, on `device`).
class DeviceAdamFlatOptimizer : public FlatOptimizer {
 public:
  /// `spec.kind` must be kAdam or kAdamW. `useFused` false forces the tensor-op path (tests compare both).
  DeviceAdamFlatOptimizer(const OptimizerSpec& spec, int64_t numel, c10::Device device, bool useFused);

  void step(at::Tensor params, const at::Tensor& grads, double lr) override;
  void stepAndCopy(at::Tensor params, const at::Tensor& grads, double lr, at::Tensor lowPrecisionOut) override;
  OptimizerState state() const override;
  int64_t stepCount() const override { return step_; }
  void loadState(const OptimizerState& state, int64_t stepCount) override;

  /// True when steps use ATen's fused kernel (for runs with bias correction on).
  bool usesFusedKernel() const { return useFused_; }

 private:
  void run(at::Tensor& params, const at::Tensor& grads, double lr, const at::Tensor& lowPrecisionOut);
  /// Tensor-op Adam on one run's slices (DeepSpeed FusedAdam's rule, bias correction optional).
  void stepSlices(at::Tensor p, at::Tensor g, at::Tensor m, at::Tensor v, const OptimizerSpec& spec, double lr) const;

  bool useFused_;
  at::Tensor expAvg_;
  at::Tensor expAvgSq_;
  /// The fused kernels read the step number from a device tensor; refilled before each step.
  at::Tensor stepTensor_;
  int64_t step_ = 0;
};

}  // namespace dsrt::optim
