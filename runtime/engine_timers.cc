#include "runtime/engine_timers.h"

#include <cstdio>
#include <cstring>

namespace dsrt {

std::string EngineTimers::format(int64_t steps) const {
  const double n = steps > 0 ? static_cast<double>(steps) : 1.0;
  char buf[400];
  int len = std::snprintf(buf, sizeof buf, "forward: %.2f | backward: %.2f | allreduce: %.2f | step: %.2f",
                          ms(kForward) / n, ms(kBackward) / n, ms(kAllreduce) / n, ms(kStep) / n);
  bool zero = false;
  for (int p = kReduceScatter; p < kNumPhases; ++p) {
    zero = zero || total_[static_cast<size_t>(p)].count() > 0;
  }
  const bool stage3 = total_[kParamGather].count() > 0 || total_[kParamCopy].count() > 0;
  if (zero && len > 0 && static_cast<size_t>(len) < sizeof buf) {
    std::snprintf(buf + len, sizeof buf - static_cast<size_t>(len),
                  " | reduce_scatter: %.2f | grad_copy: %.2f | optimizer_step: %.2f | optimizer_allgather: %.2f",
                  ms(kReduceScatter) / n, ms(kGradCopy) / n, ms(kOptimizerStep) / n, ms(kAllgather) / n);
    len = static_cast<int>(std::strlen(buf));
  }
  if (stage3 && len > 0 && static_cast<size_t>(len) < sizeof buf) {
    std::snprintf(buf + len, sizeof buf - static_cast<size_t>(len), " | param_gather: %.2f | param_copy: %.2f",
                  ms(kParamGather) / n, ms(kParamCopy) / n);
  }
  return buf;
}

}  // namespace dsrt
