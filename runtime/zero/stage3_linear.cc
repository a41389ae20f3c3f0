#include "runtime/zero/stage3_linear.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

namespace dsrt::zero {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct LinearFunction : torch::autograd::Function<LinearFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias) {
    // Leaves (parameters) are saved as themselves: backward reads whatever data they hold then.
    ctx->save_for_backward({input, weight, bias});
    return at::linear(input, weight, bias);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& input = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& bias = saved[2];
    const at::Tensor& grad = grads[0];
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
    return {gradInput, gradWeight, gradBias};
  }
};

}  // namespace

at::Tensor linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias) {
  return LinearFunction::apply(input, weight, bias);
}

}  // namespace dsrt::zero
