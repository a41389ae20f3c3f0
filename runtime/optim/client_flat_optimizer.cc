#include "runtime/optim/client_flat_optimizer.h"

#include <c10/util/Exception.h>

#include <utility>

namespace dsrt::optim {

ClientFlatOptimizer::ClientFlatOptimizer(at::Tensor flatParams, ClientOptimizerCallbacks callbacks)
    : FlatOptimizer(OptimizerSpec{}, flatParams.numel(), flatParams.device()),
      flatParams_(std::move(flatParams)),
      callbacks_(std::move(callbacks)) {
  TORCH_CHECK(callbacks_.bind && callbacks_.step && callbacks_.state && callbacks_.stepCount && callbacks_.loadState,
              "client optimizer: every callback (bind, step, state, stepCount, loadState) must be set");
}

void ClientFlatOptimizer::bind() const {
  if (bound_) {
    return;
  }
  std::vector<GroupRun> runs = groupRuns();
  if (runs.empty()) {
    runs.push_back({numel_, 0});
  }
  callbacks_.bind(flatParams_, runs);
  bound_ = true;
}

void ClientFlatOptimizer::step(at::Tensor params, const at::Tensor& grads, double lr) {
  checkOperand(params, at::kFloat, "params");
  checkOperand(grads, at::kFloat, "grads");
  // The client's parameter views alias flatParams_: a step on another tensor would update nothing it sees.
  TORCH_CHECK(params.is_same(flatParams_) || params.data_ptr() == flatParams_.data_ptr(),
              "client optimizer: step on a tensor other than the flat partition it was built for");
  bind();
  callbacks_.step(params, grads, lr);
}

OptimizerState ClientFlatOptimizer::state() const {
  bind();
  return callbacks_.state();
}

int64_t ClientFlatOptimizer::stepCount() const { return callbacks_.stepCount(); }

void ClientFlatOptimizer::loadState(const OptimizerState& state, int64_t stepCount) {
  for (const auto& [name, t] : state) {
    TORCH_CHECK(t.numel() == numel_, "client optimizer: state '", name, "' must have ", numel_, " elements, got '",
                t.numel(), "'");
  }
  bind();
  callbacks_.loadState(state, stepCount);
}

}  // namespace dsrt::optim
