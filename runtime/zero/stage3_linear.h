#pragma once
// dsrt::zero::linear(input, weight, bias): y = input @ weight^T + bias, the same values as at::linear,
// for use inside modules called through dsrt::zero::forward. It saves the parameters themselves for
// backward (DeepSpeed's LinearFunctionForZeroStage3), not at::linear's weight.t() view: such a view
// keeps the gathered storage alive until backward, so under ZeRO-3 a torch::nn::Linear's weight is
// only freed after its backward (correct, but no memory saving between forward and backward). With
// this function the storage is freed right after the forward and gathered again for the backward.

#include <ATen/core/Tensor.h>

namespace dsrt::zero {

/// `input` [..., in], `weight` [out, in], `bias` [out] or undefined. Differentiable in all three.
/// fp16 weights on the CPU (no fp16 matmul there) compute in fp32 and round the output to fp16.
at::Tensor linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias = at::Tensor());

}  // namespace dsrt::zero
