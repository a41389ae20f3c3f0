#pragma once
// "This parameter's gradient is final" notifications for LibTorch 1.13, which has no
// post-accumulate-grad hook: a post hook on each parameter's grad accumulator, the way c10d's DDP
// Reducer does it (see docs/platform.md §2).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "runtime/compat/grad_accumulator.h"

namespace dsrt::zero {

/// Calls `onReady(i)` after autograd has accumulated params[i].grad, on autograd's thread (for CPU
/// tensors the thread that called backward). Keeps the accumulators alive (a tensor only holds a
/// weak_ptr to its accumulator; without ours the hook would never fire) and removes the hooks when
/// destroyed. Throws c10::Error if a parameter is not a leaf that requires grad.
class GradReadyHooks {
 public:
  GradReadyHooks(const std::vector<at::Tensor>& params, std::function<void(int64_t)> onReady);
  ~GradReadyHooks();
  GradReadyHooks(const GradReadyHooks&) = delete;
  GradReadyHooks& operator=(const GradReadyHooks&) = delete;

 private:
  std::vector<compat::GradAccumulatorPtr> accumulators_;  ///< one per parameter
  std::vector<uintptr_t> keys_;                                        ///< del_post_hook keys
};

}  // namespace dsrt::zero
