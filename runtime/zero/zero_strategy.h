#pragma once
// Factory for ZeRO stages 1, 2 and 3 behind the engine's GradStrategy seam (runtime/grad_strategy.h).

#include "runtime/grad_strategy.h"

#include <memory>

namespace dsrt::zero {

/// Stage1Optimizer for stage 1, Stage2Optimizer for stage 2, Stage3Strategy for stage 3. Collective over
/// ctx.pg only through the strategies' later calls (construction communicates nothing). Throws c10::Error for another stage,
/// non-fp32 parameters or an optimizer factory that does not build over the partition.
std::unique_ptr<GradStrategy> makeZeroStrategy(int stage, StrategyContext ctx);

}  // namespace dsrt::zero
