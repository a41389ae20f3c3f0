#pragma once
// Adagrad over one flat fp32 partition, with torch.optim.Adagrad's rule (what DeepSpeed builds for
// "Adagrad" without offload), written with the ATen operations torch's single-tensor loop uses:
//   g' = g + wd * p;  sum += g' * g';  p -= lr / (1 + (step - 1) * lr_decay) * g' / (sqrt(sum) + eps)
// With spec.adagradRawGradStep the numerator is the raw g, as DeepSpeedCPUAdagrad (csrc/adagrad/
// cpu_adagrad.cpp: what DeepSpeed builds under offload_optimizer) computes it.

#include "runtime/optim/elementwise_flat_optimizer.h"

namespace dsrt::optim {

/// See ElementwiseFlatOptimizer. State: sum (fp32, numel; torch's name), initialAccumulatorValue at the start.
class AdagradFlatOptimizer : public ElementwiseFlatOptimizer {
 public:
  AdagradFlatOptimizer(const OptimizerSpec& spec, int64_t numel, c10::Device device = c10::Device(c10::kCPU));

  OptimizerState state() const override { return {{"sum", sum_}}; }
  void loadState(const OptimizerState& state, int64_t stepCount) override;

 private:
  void updateRun(const Run& run, const OptimizerSpec& spec, double lr, int64_t step) override;
  at::Tensor sum_;
};

}  // namespace dsrt::optim
