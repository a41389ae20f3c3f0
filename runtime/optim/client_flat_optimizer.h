#pragma once
// A FlatOptimizer whose update is done by someone else: the Python package's client optimizer (any
// torch.optim.Optimizer, stepped over runs of this flat fp32 tensor, as DeepSpeed steps a client optimizer
// over its flat partitions). The engine and the ZeRO strategies keep doing everything around the update
// (reduction, unscaling, clipping, the low-precision copy-back, the all-gather); only the update itself
// and the state it keeps go through the callbacks. Torch-free of Python: the callbacks are plain
// std::functions (python/csrc/client_optimizer.cc adapts a Python object to them).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/optim/flat_optimizer.h"

namespace dsrt::optim {

/// What a client optimizer provides. Every callback may throw c10::Error.
struct ClientOptimizerCallbacks {
  /// Once the strategy has set the group runs: the flat tensor the optimizer updates (alive as long as
  /// the optimizer) and its runs (end, group), covering [0, numel()); one run of group 0 without groups.
  std::function<void(const at::Tensor& flatParams, const std::vector<GroupRun>& runs)> bind;
  /// One update of `params` (the bound tensor) from `grads` (fp32, averaged, unscaled, clipped);
  /// `lr` is the engine's scheduled lr (the client reads its groups' own).
  std::function<void(const at::Tensor& params, const at::Tensor& grads, double lr)> step;
  /// Elementwise state as flat tensors of numel() elements (same names on every rank), for checkpoints.
  std::function<OptimizerState()> state;
  /// The step count its state records (0 before the first step).
  std::function<int64_t()> stepCount;
  /// Replaces the state (what state() returned, re-partitioned for this rank) and the step count.
  std::function<void(const OptimizerState& state, int64_t stepCount)> loadState;
};

/// Steps a flat fp32 tensor through ClientOptimizerCallbacks. The callbacks are bound lazily, on the first
/// call that needs the layout, so the strategy's setGroupRuns() comes first.
class ClientFlatOptimizer final : public FlatOptimizer {
 public:
  ClientFlatOptimizer(at::Tensor flatParams, ClientOptimizerCallbacks callbacks);

  void step(at::Tensor params, const at::Tensor& grads, double lr) override;
  OptimizerState state() const override;
  int64_t stepCount() const override;
  void loadState(const OptimizerState& state, int64_t stepCount) override;

  /// Hands the flat tensor and its runs to the client now (initialize() rewires the client's param
  /// groups at once, as DeepSpeed does); later calls do nothing.
  void bind() const;

 private:
  at::Tensor flatParams_;
  ClientOptimizerCallbacks callbacks_;
  mutable bool bound_ = false;
};

}  // namespace dsrt::optim
