#include "runtime/optim/device_adam_flat_optimizer.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>

#include <cmath>

#include "runtime/compat/fused_adam_compat.h"
#include "runtime/optim/adam_state.h"

namespace dsrt::optim {

DeviceAdamFlatOptimizer::DeviceAdamFlatOptimizer(const OptimizerSpec& spec, int64_t numel, c10::Device device,
                                                 bool useFused)
    : FlatOptimizer(spec, numel, device),
      useFused_(useFused),
      expAvg_(at::zeros({numel}, at::TensorOptions().dtype(at::kFloat).device(device))),
      expAvgSq_(at::zeros({numel}, at::TensorOptions().dtype(at::kFloat).device(device))),
      stepTensor_(at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(device))) {
  TORCH_CHECK(spec.kind != OptimizerKind::kSgd, "optimizer: DeviceAdamFlatOptimizer built with an SGD spec");
  TORCH_CHECK(!useFused || compat::hasFusedAdam(device.type()), "optimizer: no fused Adam kernel for ", device,
              " in this LibTorch");
}

void DeviceAdamFlatOptimizer::step(at::Tensor params, const at::Tensor& grads, double lr) {
  run(params, grads, lr, at::Tensor());
}

void DeviceAdamFlatOptimizer::stepAndCopy(at::Tensor params, const at::Tensor& grads, double lr,
                                          at::Tensor lowPrecisionOut) {
  TORCH_CHECK(lowPrecisionOut.scalar_type() == at::kHalf || lowPrecisionOut.scalar_type() == at::kBFloat16,
              "optimizer: the low-precision copy must be Half or BFloat16, got '", lowPrecisionOut.scalar_type(),
              "'");
  checkOperand(lowPrecisionOut, lowPrecisionOut.scalar_type(), "low-precision copy");
  run(params, grads, lr, lowPrecisionOut);
}

void DeviceAdamFlatOptimizer::run(at::Tensor& params, const at::Tensor& grads, double lr,
                                  const at::Tensor& lowPrecisionOut) {
  checkOperand(params, at::kFloat, "params");
  checkOperand(grads, at::kFloat, "grads");
  c10::AutoGradMode noGrad(false);
  ++step_;
  if (useFused_) {
    // torch.optim.Adam(fused=True) also advances state_steps before the kernel reads it.
    stepTensor_.fill_(static_cast<double>(step_));
  }
  forEachGroupRange(0, numel_, lr, [&](int64_t from, int64_t to, const OptimizerSpec& spec, double groupLr) {
    const int64_t n = to - from;
    at::Tensor p = params.narrow(0, from, n);
    at::Tensor g = grads.narrow(0, from, n);
    at::Tensor m = expAvg_.narrow(0, from, n);
    at::Tensor v = expAvgSq_.narrow(0, from, n);
    if (useFused_ && spec.biasCorrection) {
      compat::fusedAdamStep(p, g, m, v, stepTensor_, groupLr, spec.beta1, spec.beta2, spec.weightDecay, spec.eps,
                            decoupledWeightDecay(spec));
    } else {
      stepSlices(p, g, m, v, spec, groupLr);
    }
    if (lowPrecisionOut.defined()) {
      lowPrecisionOut.narrow(0, from, n).copy_(p);
    }
  });
}

void DeviceAdamFlatOptimizer::stepSlices(at::Tensor p, at::Tensor g, at::Tensor m, at::Tensor v,
                                         const OptimizerSpec& spec, double lr) const {
  if (spec.weightDecay != 0.0) {
    if (decoupledWeightDecay(spec)) {
      p.mul_(1.0 - lr * spec.weightDecay);
    } else {
      g = g.add(p, spec.weightDecay);  // a new tensor: the caller's gradients are only read
    }
  }
  // torch.optim.Adam's single-tensor rule (lerp for the first moment), so CPU runs compare closely.
  m.lerp_(g, 1.0 - spec.beta1);
  v.mul_(spec.beta2).addcmul_(g, g, 1.0 - spec.beta2);
  double stepSize = lr;
  at::Tensor denom = v.sqrt();
  if (spec.biasCorrection) {
    const double t = static_cast<double>(step_);
    stepSize = lr / (1.0 - std::pow(spec.beta1, t));
    denom.div_(std::sqrt(1.0 - std::pow(spec.beta2, t)));
  }
  denom.add_(spec.eps);
  p.addcdiv_(m, denom, -stepSize);
}

OptimizerState DeviceAdamFlatOptimizer::state() const {
  return {{"exp_avg", expAvg_}, {"exp_avg_sq", expAvgSq_}};
}

void DeviceAdamFlatOptimizer::loadState(const OptimizerState& state, int64_t stepCount) {
  const AdamStateTensors loaded = adamStateOf(state, stepCount, numel_);
  // copy_ moves checkpoint tensors (CPU) onto this optimizer's device.
  expAvg_.copy_(loaded.expAvg);
  expAvgSq_.copy_(loaded.expAvgSq);
  step_ = stepCount;
}

}  // namespace dsrt::optim
