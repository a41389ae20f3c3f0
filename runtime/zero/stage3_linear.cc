#include "runtime/zero/stage3_linear.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

namespace dsrt::zero {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// CPU LibTorch has no fp16 matmul: fp16 weights on the CPU compute in fp32 and round the result.
bool cpuHalf(const at::Tensor& weight) {
  return weight.scalar_type() == at::kHalf && weight.device().is_cpu();
}

at::Tensor floatOrNone(const at::Tensor& t) {
  return t.defined() ? t.to(at::kFloat) : t;
}

struct LinearFunction : torch::autograd::Function<LinearFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias) {
    // Leaves (parameters) are saved as themselves: backward reads whatever data they hold then.
    ctx->save_for_backward({input, weight, bias});
    if (cpuHalf(weight)) {
      return at::linear(input.to(at::kFloat), weight.to(at::kFloat), floatOrNone(bias)).to(at::kHalf);
    }
    return at::linear(input, weight, bias);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const bool half = cpuHalf(saved[1]);
    const at::Tensor input = half ? saved[0].to(at::kFloat) : saved[0];
    const at::Tensor weight = half ? saved[1].to(at::kFloat) : saved[1];
    const at::Tensor& bias = saved[2];
    const at::Tensor grad = half ? grads[0].to(at::kFloat) : grads[0];
    TORCH_CHECK(weight.numel() > 0 || input.size(-1) == 0,
                "dsrt::zero::linear: the weight holds no data in backward (ZeRO-3 released it: call the "
                "module through dsrt::zero::forward), got shape ", weight.sizes());
    at::Tensor gradInput;
    at::Tensor gradWeight;
    at::Tensor gradBias;
    if (ctx->needs_input_grad(0)) {
      gradInput = grad.matmul(weight);
    }
    const at::Tensor grad2d = grad.reshape({-1, grad.size(-1)});
    if (ctx->needs_input_grad(1)) {
      gradWeight = grad2d.t().matmul(input.reshape({-1, input.size(-1)}));
    }
    if (bias.defined() && ctx->needs_input_grad(2)) {
      gradBias = grad2d.sum(0);
    }
    if (half) {  // gradients in the dtypes of what they are for
      gradInput = gradInput.defined() ? gradInput.to(saved[0].scalar_type()) : gradInput;
      gradWeight = gradWeight.defined() ? gradWeight.to(at::kHalf) : gradWeight;
      gradBias = gradBias.defined() ? gradBias.to(bias.scalar_type()) : gradBias;
    }
    return {gradInput, gradWeight, gradBias};
  }
};

}  // namespace

at::Tensor linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias) {
  return LinearFunction::apply(input, weight, bias);
}

}  // namespace dsrt::zero
