#pragma once
// Loading the named state of the one-tensor-state optimizers (Lion's exp_avg, Adagrad's sum) from a
// checkpoint or a ZeRO re-partition, checked the same way for each.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/optim/flat_optimizer.h"

namespace dsrt::optim {

/// Copies each entry of `state` into the live tensor `targets` names for it. Throws c10::Error (naming
/// `kind`) for a negative stepCount, a name `targets` lacks, a missing or repeated name, or a tensor whose
/// numel differs from its target's.
void loadFlatState(const OptimizerState& state, int64_t stepCount, const char* kind,
                   const std::vector<std::pair<std::string, at::Tensor*>>& targets);

}  // namespace dsrt::optim
