#include "runtime/optim/adam_state.h"

#include <c10/util/Exception.h>

namespace dsrt::optim {

AdamStateTensors adamStateOf(const OptimizerState& state, int64_t stepCount, int64_t numel) {
  TORCH_CHECK(stepCount >= 0, "optimizer: step count must be >= 0, got '", stepCount, "'");
  AdamStateTensors out;
  for (const auto& entry : state) {
    if (entry.first == "exp_avg") {
      out.expAvg = entry.second;
    } else if (entry.first == "exp_avg_sq") {
      out.expAvgSq = entry.second;
    } else {
      TORCH_CHECK(false, "optimizer: unknown Adam state '", entry.first, "' (expected exp_avg, exp_avg_sq)");
    }
  }
  TORCH_CHECK(state.size() == 2 && out.expAvg.defined() && out.expAvgSq.defined(),
              "optimizer: Adam state needs exp_avg and exp_avg_sq, got ", state.size(), " tensors");
  TORCH_CHECK(out.expAvg.numel() == numel && out.expAvgSq.numel() == numel, "optimizer: Adam state must have ",
              numel, " elements, got '", out.expAvg.numel(), "' and '", out.expAvgSq.numel(), "'");
  out.expAvg = out.expAvg.reshape({numel});
  out.expAvgSq = out.expAvgSq.reshape({numel});
  return out;
}

}  // namespace dsrt::optim
