#include "runtime/optim/sgd_flat_optimizer.h"

#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

namespace dsrt::optim {

SgdFlatOptimizer::SgdFlatOptimizer(const OptimizerSpec& spec, int64_t numel, c10::Device device)
    : ElementwiseFlatOptimizer(spec, numel, device),
      momentumBuffer_(at::zeros({numel}, at::TensorOptions().dtype(at::kFloat).device(device))) {
  TORCH_CHECK(spec.kind == OptimizerKind::kSgd, "optimizer: SgdFlatOptimizer built with an Adam spec");
}

void SgdFlatOptimizer::updateRun(const Run& run, const OptimizerSpec& spec, double lr, int64_t /*step*/) {
  at::Tensor d = run.grads;
  if (spec.weightDecay != 0.0) {
    d = d.add(run.params, spec.weightDecay);
  }
  if (spec_.momentum != 0.0) {
    at::Tensor buffer = momentumBuffer_.narrow(0, run.from, run.to - run.from);
    if (!bufferReady_) {
      buffer.copy_(d);
    } else {
      buffer.mul_(spec_.momentum).add_(d, 1.0 - spec_.dampening);
    }
    d = spec_.nesterov ? d.add(buffer, spec_.momentum) : buffer;
  }
  run.params.add_(d, -lr);
}

void SgdFlatOptimizer::stepFinished() { bufferReady_ = bufferReady_ || spec_.momentum != 0.0; }

OptimizerState SgdFlatOptimizer::state() const {
  if (spec_.momentum == 0.0) {
    return {};
  }
  return {{"momentum_buffer", momentumBuffer_}};
}

void SgdFlatOptimizer::loadState(const OptimizerState& state, int64_t stepCount) {
  TORCH_CHECK(stepCount >= 0, "optimizer: step count must be >= 0, got '", stepCount, "'");
  bufferReady_ = false;
  for (const auto& entry : state) {
    TORCH_CHECK(entry.first == "momentum_buffer", "optimizer: unknown SGD state '", entry.first,
                "' (expected momentum_buffer)");
    TORCH_CHECK(entry.second.numel() == numel_, "optimizer: SGD momentum_buffer must have ", numel_,
                " elements, got '", entry.second.numel(), "'");
    momentumBuffer_.copy_(entry.second.reshape({numel_}));
    bufferReady_ = stepCount > 0;
  }
  TORCH_CHECK(spec_.momentum == 0.0 || stepCount == 0 || bufferReady_,
              "optimizer: SGD with momentum at step ", stepCount, " needs a momentum_buffer");
  step_ = stepCount;
}

}  // namespace dsrt::optim
