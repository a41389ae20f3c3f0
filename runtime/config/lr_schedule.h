#pragma once
// DeepSpeed's learning-rate schedules (deepspeed/runtime/lr_schedules.py) as pure functions of the
// scheduler's iteration counter, computed with the same floating-point operations in the same order.
//
// DeepSpeed's scheduler keeps `last_batch_iteration`, -1 when constructed, and the engine calls step() (which
// increments it) after every optimizer step that was not skipped for overflow. So optimizer step k (0-based,
// counting only applied steps) runs with learningRate(s, k - 1), and a resumed run continues from the
// saved counter.

#include <array>
#include <cstdint>
#include <optional>

#include "runtime/config/deepspeed_config.h"

namespace dsrt::config {

/// The lr DeepSpeed's scheduler of type s.type holds when its last_batch_iteration is `lastBatchIteration`
/// (>= -1). WarmupCosineLR scales s.baseLr (the optimizer's lr).
double learningRate(const SchedulerConfig& s, int64_t lastBatchIteration);

/// OneCycle's momentum cycling: the optimizer's betas (beta1 cycled between cycle_max_mom and cycle_min_mom,
/// beta2 forced to 0.99 as DeepSpeed does). nullopt for other schedulers, when cycle_momentum is false, or
/// when the optimizer has no betas (SGD: DeepSpeed disables cycling with a warning).
std::optional<std::array<double, 2>> oneCycleBetas(const SchedulerConfig& s, int64_t lastBatchIteration,
                                                   bool optimizerHasBetas);

}  // namespace dsrt::config
