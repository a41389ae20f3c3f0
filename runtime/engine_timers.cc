#include "runtime/engine_timers.h"

#include <cstdio>

namespace dsrt {

std::string EngineTimers::format(int64_t steps) const {
  const double n = steps > 0 ? static_cast<double>(steps) : 1.0;
  char buf[160];
  std::snprintf(buf, sizeof buf, "forward: %.2f | backward: %.2f | allreduce: %.2f | step: %.2f", ms(kForward) / n,
                ms(kBackward) / n, ms(kAllreduce) / n, ms(kStep) / n);
  return buf;
}

}  // namespace dsrt
