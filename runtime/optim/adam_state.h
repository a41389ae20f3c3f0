#pragma once
// Adam's two state tensors as checkpoints and ZeRO re-partitioning hand them to FlatOptimizer::loadState,
// checked once for both Adam optimizers (the vectorised CPU one and the device one).

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "runtime/optim/flat_optimizer.h"

namespace dsrt::optim {

/// Views of exp_avg and exp_avg_sq, flat, each `numel` elements (any device or dtype: loadState copies).
struct AdamStateTensors {
  at::Tensor expAvg;
  at::Tensor expAvgSq;
};

/// Picks exp_avg and exp_avg_sq out of `state` (torch's names, any order) and checks `stepCount` >= 0, that
/// there is nothing else and that each has `numel` elements. Throws c10::Error naming what is wrong.
AdamStateTensors adamStateOf(const OptimizerState& state, int64_t stepCount, int64_t numel);

}  // namespace dsrt::optim
