#include "runtime/compat/fused_adam_compat.h"

#include <c10/util/Exception.h>
#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#include <ATen/ops/_fused_adam.h>
#include <ATen/ops/_fused_adamw.h>
#endif

namespace dsrt::compat {

bool hasFusedAdam(c10::DeviceType type) {
#if TORCH_VERSION_MAJOR >= 2
  if (type == c10::DeviceType::CUDA) {
    return true;
  }
  // The CPU kernels (aten/src/ATen/native/FusedAdam.cpp) arrived in torch 2.4.
  return type == c10::DeviceType::CPU && (TORCH_VERSION_MAJOR > 2 || TORCH_VERSION_MINOR >= 4);
#else
  (void)type;
  return false;
#endif
}

void fusedAdamStep(const at::Tensor& params, const at::Tensor& grads, const at::Tensor& expAvg,
                   const at::Tensor& expAvgSq, const at::Tensor& stepTensor, double lr, double beta1,
                   double beta2, double weightDecay, double eps, bool decoupled) {
  TORCH_CHECK(hasFusedAdam(params.device().type()), "optimizer: this LibTorch (", TORCH_VERSION,
              ") has no fused Adam kernel for ", params.device());
#if TORCH_VERSION_MAJOR >= 2
  // One-element lists: the caller hands a whole flat run, so one kernel launch covers it.
  const at::Tensor p[] = {params};
  const at::Tensor g[] = {grads};
  const at::Tensor m[] = {expAvg};
  const at::Tensor v[] = {expAvgSq};
  const at::Tensor s[] = {stepTensor};
  if (decoupled) {
    at::_fused_adamw_(p, g, m, v, {}, s, lr, beta1, beta2, weightDecay, eps, /*amsgrad=*/false,
                      /*maximize=*/false);
  } else {
    at::_fused_adam_(p, g, m, v, {}, s, lr, beta1, beta2, weightDecay, eps, /*amsgrad=*/false,
                     /*maximize=*/false);
  }
#else
  (void)grads, (void)expAvg, (void)expAvgSq, (void)stepTensor, (void)lr, (void)beta1, (void)beta2;
  (void)weightDecay, (void)eps, (void)decoupled;
#endif
}

}  // namespace dsrt::compat
