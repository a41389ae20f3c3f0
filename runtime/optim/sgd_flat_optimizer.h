#pragma once
// SGD with momentum, dampening, nesterov and L2 weight decay (torch.optim.SGD's rule) over one flat fp32
// partition, written with the same ATen operations torch uses so results match it bit for bit.

#include "runtime/optim/elementwise_flat_optimizer.h"

namespace dsrt::optim {

/// See ElementwiseFlatOptimizer. State: momentum_buffer (fp32, numel) when momentum != 0; like torch, the
/// first step initialises it to the gradient.
class SgdFlatOptimizer : public ElementwiseFlatOptimizer {
 public:
  SgdFlatOptimizer(const OptimizerSpec& spec, int64_t numel, c10::Device device = c10::Device(c10::kCPU));

  OptimizerState state() const override;
  void loadState(const OptimizerState& state, int64_t stepCount) override;

 private:
  void updateRun(const Run& run, const OptimizerSpec& spec, double lr, int64_t step) override;
  void stepFinished() override;
  at::Tensor momentumBuffer_;
  /// Whether momentumBuffer_ holds a value (torch creates it on the first step with momentum).
  bool bufferReady_ = false;
};

}  // namespace dsrt::optim
