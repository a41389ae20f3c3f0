#include "runtime/optim/lion_flat_optimizer.h"

#include <ATen/ops/copysign.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

#include "runtime/optim/flat_state_load.h"

namespace dsrt::optim {

LionFlatOptimizer::LionFlatOptimizer(const OptimizerSpec& spec, int64_t numel, c10::Device device)
    : ElementwiseFlatOptimizer(spec, numel, device),
      expAvg_(at::zeros({numel}, at::TensorOptions().dtype(at::kFloat).device(device))) {
  TORCH_CHECK(spec.kind == OptimizerKind::kLion, "optimizer: LionFlatOptimizer built with a ", kindName(spec.kind),
              " spec");
}

void LionFlatOptimizer::updateRun(const Run& run, const OptimizerSpec& spec, double lr, int64_t /*step*/) {
  at::Tensor m = expAvg_.narrow(0, run.from, run.to - run.from);
  // p -= copysign(lr, c): a set sign bit (negative c, or -0) steps up, a clear one down. Written over c in place
  // (one temporary, as a torch-ops Lion), with lr as a 0-dim fp32 operand so the step is float on every device,
  // as the kernels' float alpha.
  at::Tensor c = m.mul(spec.beta1).add_(run.grads, 1.0 - spec.beta1);
  at::copysign_out(c, at::scalar_tensor(lr, c.options()), c);
  if (spec.weightDecay > 0.0) {
    run.params.mul_(1.0 - lr * spec.weightDecay);
  }
  run.params.sub_(c);
  m.mul_(spec.beta2).add_(run.grads, 1.0 - spec.beta2);
}

void LionFlatOptimizer::loadState(const OptimizerState& state, int64_t stepCount) {
  loadFlatState(state, stepCount, "Lion", {{"exp_avg", &expAvg_}});
  step_ = stepCount;
}

}  // namespace dsrt::optim
