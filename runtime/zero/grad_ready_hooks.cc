#include "runtime/zero/grad_ready_hooks.h"

#include <c10/util/Exception.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

namespace dsrt::zero {

GradReadyHooks::GradReadyHooks(const std::vector<at::Tensor>& params, std::function<void(int64_t)> onReady) {
  auto callback = std::make_shared<std::function<void(int64_t)>>(std::move(onReady));
  for (size_t i = 0; i < params.size(); ++i) {
    TORCH_CHECK(params[i].is_leaf() && params[i].requires_grad(), "zero: parameter ", i,
                " must be a leaf tensor with requires_grad, got '", params[i].is_leaf() ? "no grad" : "non-leaf",
                "'");
    auto acc = torch::autograd::impl::grad_accumulator(params[i]);
    auto index = static_cast<int64_t>(i);
    keys_.push_back(acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [callback, index](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          (*callback)(index);
          return outputs;
        })));
    accumulators_.push_back(std::move(acc));
  }
}

GradReadyHooks::~GradReadyHooks() {
  for (size_t i = 0; i < accumulators_.size(); ++i) {
    accumulators_[i]->del_post_hook(keys_[i]);
  }
}

}  // namespace dsrt::zero
