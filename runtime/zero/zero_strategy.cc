#include "runtime/zero/zero_strategy.h"

#include "runtime/zero/stage1_optimizer.h"
#include "runtime/zero/stage2_optimizer.h"
#include "runtime/zero/stage3_strategy.h"

#include <c10/util/Exception.h>

namespace dsrt::zero {

std::unique_ptr<GradStrategy> makeZeroStrategy(int stage, StrategyContext ctx) {
  if (stage == 1) {
    return std::make_unique<Stage1Optimizer>(std::move(ctx));
  }
  if (stage == 2) {
    return std::make_unique<Stage2Optimizer>(std::move(ctx));
  }
  if (stage == 3) {
    return std::make_unique<Stage3Strategy>(std::move(ctx));
  }
  TORCH_CHECK(false, "zero_optimization.stage: runtime/zero implements stages 1, 2 and 3, got '", stage, "'");
}

}  // namespace dsrt::zero
