#include "runtime/grad_strategy.h"

#include <c10/util/Exception.h>

#include "runtime/ddp/ddp_strategy.h"
#include "runtime/zero/zero_strategy.h"

namespace dsrt {

ParamFragment GradStrategy::fragment(int64_t /*param*/) const {
  TORCH_CHECK(false, "safe_get_full_fp32_param and friends: this data-parallel strategy keeps no per-parameter "
              "fragments, got a fragment request");
}

std::unique_ptr<GradStrategy> makeGradStrategy(int stage, StrategyContext ctx) {
  TORCH_CHECK(ctx.pg, "makeGradStrategy: no process group");
  TORCH_CHECK(ctx.makeOptimizer, "makeGradStrategy: no optimizer factory");
  TORCH_CHECK(stage >= 0 && stage <= 3, "zero_optimization.stage: libdsrt implements stages 0, 1, 2 and 3, got '",
              stage, "'");
  if (stage == 0) {
    return ddp::makeDdpStrategy(std::move(ctx));
  }
  return zero::makeZeroStrategy(stage, std::move(ctx));
}

}  // namespace dsrt
