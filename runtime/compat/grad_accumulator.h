#pragma once
// The owning pointer to a parameter's gradient accumulator (the autograd Node whose post hooks say "this
// gradient is final"): std::shared_ptr<Node> up to torch 2.1x, c10::intrusive_ptr<Node> in newer torches.
// Named once here so the hook owners (ddp/grad_reducer, zero/grad_ready_hooks) hold whichever it is.

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/variable.h>

#include <utility>

namespace dsrt::compat {

using GradAccumulatorPtr =
    std::decay_t<decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>()))>;

}  // namespace dsrt::compat
