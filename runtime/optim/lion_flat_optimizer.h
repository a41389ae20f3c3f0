#pragma once
// Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms") over one flat fp32 partition,
// with DeepSpeed's rule (csrc/lion/cpu_lion_impl.cpp, DeepSpeedCPULion):
//   c = beta1 * m + (1 - beta1) * g
//   p = p * (1 - lr * wd) - copysign(lr, c)      (the decay factor only when wd > 0)
//   m = beta2 * m + (1 - beta2) * g
// The sign step never is 0: c == +0 steps by -lr and c == -0 by +lr, as DeepSpeed's CPU kernel
// (its CUDA FusedLion steps +lr for both zeros; the two differ only where c is exactly zero).

#include "runtime/optim/elementwise_flat_optimizer.h"

namespace dsrt::optim {

/// See ElementwiseFlatOptimizer. State: exp_avg (fp32, numel; DeepSpeed's name), zero at the start.
class LionFlatOptimizer : public ElementwiseFlatOptimizer {
 public:
  LionFlatOptimizer(const OptimizerSpec& spec, int64_t numel, c10::Device device = c10::Device(c10::kCPU));

  OptimizerState state() const override { return {{"exp_avg", expAvg_}}; }
  void loadState(const OptimizerState& state, int64_t stepCount) override;

 private:
  void updateRun(const Run& run, const OptimizerSpec& spec, double lr, int64_t step) override;
  at::Tensor expAvg_;
};

}  // namespace dsrt::optim
