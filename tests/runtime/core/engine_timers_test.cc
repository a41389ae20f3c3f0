// wall_clock_breakdown's line: the four engine phases always, the ZeRO phases once any was timed, ZeRO-3's
// parameter gathers once they were.
#include "runtime/engine_timers.h"

#include <catch2/catch.hpp>

#include <chrono>

using dsrt::EngineTimers;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;

TEST_CASE("EngineTimers::format prints ms per step of the engine phases and adds ZeRO phases only when timed",
          "[runtime][timers]") {
  EngineTimers timers;
  timers.add(EngineTimers::kForward, std::chrono::milliseconds(4));
  timers.add(EngineTimers::kBackward, std::chrono::milliseconds(8));
  timers.add(EngineTimers::kAllreduce, std::chrono::milliseconds(2));
  timers.add(EngineTimers::kStep, std::chrono::milliseconds(6));
  CHECK_THAT(timers.format(2), Equals("forward: 2.00 | backward: 4.00 | allreduce: 1.00 | step: 3.00"));

  timers.add(EngineTimers::kReduceScatter, std::chrono::milliseconds(1));
  timers.add(EngineTimers::kAllgather, std::chrono::milliseconds(3));
  CHECK_THAT(timers.format(2), Equals("forward: 2.00 | backward: 4.00 | allreduce: 1.00 | step: 3.00 | "
                                      "reduce_scatter: 0.50 | grad_copy: 0.00 | optimizer_step: 0.00 | "
                                      "optimizer_allgather: 1.50"));
  timers.add(EngineTimers::kParamGather, std::chrono::milliseconds(5));
  CHECK_THAT(timers.format(2), Equals("forward: 2.00 | backward: 4.00 | allreduce: 1.00 | step: 3.00 | "
                                      "reduce_scatter: 0.50 | grad_copy: 0.00 | optimizer_step: 0.00 | "
                                      "optimizer_allgather: 1.50 | param_gather: 2.50 | param_copy: 0.00"));
  timers.reset();
  CHECK_THAT(timers.format(1), Equals("forward: 0.00 | backward: 0.00 | allreduce: 0.00 | step: 0.00"));
}

TEST_CASE("EngineTimers::MaybeScope times into the given timers and does nothing without them", "[runtime][timers]") {
  EngineTimers timers;
  {
    EngineTimers::MaybeScope timed(&timers, EngineTimers::kGradCopy);
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() == start) {
    }
  }
  { EngineTimers::MaybeScope untimed(nullptr, EngineTimers::kGradCopy); }
  CHECK(timers.ms(EngineTimers::kGradCopy) > 0.0);
  CHECK_THAT(timers.format(1), Contains("grad_copy: "));
}
