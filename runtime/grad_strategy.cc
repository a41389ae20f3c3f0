#include "runtime/grad_strategy.h"

#include <c10/util/Exception.h>

// ZeRO stages live in runtime/zero/, written concurrently; until its factory header exists, asking
// for stage 1 or 2 is a clear error instead of a link failure.
#if __has_include("runtime/zero/zero_strategy.h")
#include "runtime/zero/zero_strategy.h"
#define DSRT_HAVE_ZERO_STRATEGY 1
#endif
#if __has_include("runtime/ddp/ddp_strategy.h")
#include "runtime/ddp/ddp_strategy.h"
#define DSRT_HAVE_DDP_STRATEGY 1
#endif

namespace dsrt {

std::unique_ptr<GradStrategy> makeGradStrategy(int stage, StrategyContext ctx) {
  TORCH_CHECK(ctx.pg, "makeGradStrategy: no process group");
  TORCH_CHECK(ctx.makeOptimizer, "makeGradStrategy: no optimizer factory");
  TORCH_CHECK(stage >= 0 && stage <= 2, "zero_optimization.stage: libdsrt implements stages 0, 1 and 2, got '",
              stage, "'");
  if (stage == 0) {
#ifdef DSRT_HAVE_DDP_STRATEGY
    return ddp::makeDdpStrategy(std::move(ctx));
#else
    TORCH_CHECK(false, "zero_optimization.stage 0: this libdsrt was built without runtime/ddp");
#endif
  }
#ifdef DSRT_HAVE_ZERO_STRATEGY
  return zero::makeZeroStrategy(stage, std::move(ctx));
#else
  TORCH_CHECK(false, "zero_optimization.stage ", stage, ": this libdsrt was built without runtime/zero");
#endif
}

}  // namespace dsrt
