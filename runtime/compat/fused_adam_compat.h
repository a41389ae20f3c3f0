#pragma once
// ATen's fused Adam/AdamW kernels differ across LibTorch versions: torch 1.13 has only a CUDA
// `_fused_adam_` (no AdamW), torch >= 2.0 adds `_fused_adamw_`, torch >= 2.4 also runs both on CPU.
// The runtime asks these functions instead of testing TORCH_VERSION itself.

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceType.h>

namespace dsrt::compat {

/// True when at::_fused_adam_ and at::_fused_adamw_ both exist and have a kernel for `type`
/// (CUDA from torch 2.0, CPU from torch 2.4).
bool hasFusedAdam(c10::DeviceType type);

/// One Adam step over one flat fp32 slice (params, grads, expAvg, expAvgSq: same device, numel,
/// contiguous; stepTensor: a 1-element fp32 tensor on that device holding the step number, already
/// advanced). `decoupled` picks _fused_adamw_ (p -= lr*wd*p) over _fused_adam_ (g += wd*p). Both always
/// bias-correct. Throws c10::Error when !hasFusedAdam(params.device().type()).
void fusedAdamStep(const at::Tensor& params, const at::Tensor& grads, const at::Tensor& expAvg,
                   const at::Tensor& expAvgSq, const at::Tensor& stepTensor, double lr, double beta1,
                   double beta2, double weightDecay, double eps, bool decoupled);

}  // namespace dsrt::compat
