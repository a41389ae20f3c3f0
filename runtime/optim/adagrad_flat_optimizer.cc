#include "runtime/optim/adagrad_flat_optimizer.h"

#include <ATen/ops/full.h>
#include <c10/util/Exception.h>

#include "runtime/optim/flat_state_load.h"

namespace dsrt::optim {

AdagradFlatOptimizer::AdagradFlatOptimizer(const OptimizerSpec& spec, int64_t numel, c10::Device device)
    : ElementwiseFlatOptimizer(spec, numel, device),
      sum_(at::full({numel}, spec.initialAccumulatorValue, at::TensorOptions().dtype(at::kFloat).device(device))) {
  TORCH_CHECK(spec.kind == OptimizerKind::kAdagrad, "optimizer: AdagradFlatOptimizer built with a ",
              kindName(spec.kind), " spec");
}

void AdagradFlatOptimizer::updateRun(const Run& run, const OptimizerSpec& spec, double lr, int64_t step) {
  at::Tensor sum = sum_.narrow(0, run.from, run.to - run.from);
  const at::Tensor decayed = spec.weightDecay != 0.0 ? run.grads.add(run.params, spec.weightDecay) : run.grads;
  const double stepLr = lr / (1.0 + static_cast<double>(step - 1) * spec.lrDecay);
  sum.addcmul_(decayed, decayed, 1.0);
  const at::Tensor std = sum.sqrt().add_(spec.eps);
  run.params.addcdiv_(spec.adagradRawGradStep ? run.grads : decayed, std, -stepLr);
}

void AdagradFlatOptimizer::loadState(const OptimizerState& state, int64_t stepCount) {
  loadFlatState(state, stepCount, "Adagrad", {{"sum", &sum_}});
  step_ = stepCount;
}

}  // namespace dsrt::optim
