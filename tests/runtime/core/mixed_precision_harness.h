#pragma once
// Mixed-precision training harness: the tiny MLP of exactness_harness.h, but usable in fp16 and bf16 on
// CPU LibTorch 1.13, which has no Half matmul (addmm_impl_cpu_ is not implemented for 'Half') and no Half
// tanh. Each layer therefore computes in fp32 from the 16-bit weights and rounds its output back to the
// weights' dtype, so activations and gradients really are 16-bit (loss scaling and overflow are real);
// only the arithmetic inside a layer is fp32, as on tensor cores. Header-only; link dsrt.

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <vector>

#include "examples/synthetic_task.h"
#include "runtime/runtime.h"
#include "tests/runtime/core/exactness_harness.h"

namespace dsrt::testing {

/// TinyMlp's parameters (same initial values for the same seed), any floating dtype.
struct MixedMlp {
  MixedMlp(int64_t dim, int64_t hidden, uint64_t seed) : params(TinyMlp(dim, hidden, seed).params) {}
  std::vector<at::Tensor> parameters() const { return params; }
  at::Tensor forward(const at::Tensor& x) {
    const auto dtype = params[0].scalar_type();
    auto layer = [&](const at::Tensor& h, size_t i, bool tanh) {
      at::Tensor y = at::linear(h.to(at::kFloat), params[i].to(at::kFloat), params[i + 1].to(at::kFloat));
      return (tanh ? at::tanh(y) : y).to(dtype);
    };
    return layer(layer(layer(x, 0, true), 2, true), 4, false);
  }
  std::vector<at::Tensor> params;
};

/// What happened at one optimizer step (every field read after engine.step() at the boundary).
struct StepRecord {
  double loss = 0;          ///< global-batch loss, averaged over ranks
  double scaleAfter = 0;    ///< engine.cur_scale()
  int64_t skipped = 0;      ///< engine.skipped_steps()
  double lr = 0;            ///< engine.get_lr()
  bool paramsChanged = false;  ///< the model's parameters differ from before the step
};

struct MixedResult {
  std::vector<StepRecord> steps;
  std::vector<at::Tensor> finalParams;  ///< the model's (16-bit) parameters, as float
  std::vector<at::Tensor> masters;      ///< strategy().fullParams(): the fp32 masters
  int64_t modelStateBytes = 0;
  int64_t offloadedStateBytes = 0;
  int64_t globalSteps = 0;
  int64_t numel = 0;
};

/// Multiplies rank `rank`'s loss at optimizer step `step` (0-based) by the returned factor (1 = normal).
using LossFactor = std::function<double(int rank, int step)>;

/// Trains `steps` optimizer steps of the synthetic task (loss in fp32 from the 16-bit outputs).
/// `repeatData`: every step sees the first step's global batch (a task the model can fit far down).
inline MixedResult trainMixed(const nlohmann::json& config, const std::shared_ptr<DistContext>& dist, int steps,
                              const LossFactor& factor = {}, bool repeatData = false, uint64_t seed = 7,
                              int64_t dim = 12, int64_t hidden = 24) {
  InitOptions opts;
  opts.dist = dist;
  opts.modelAvoidsHalfKernels = true;  // fp16 layers compute in fp32 on the CPU
  auto engine = initialize(std::make_shared<MixedMlp>(dim, hidden, seed), config, opts);
  const int64_t gas = engine->gradient_accumulation_steps();
  const int64_t micro = engine->train_micro_batch_size_per_gpu();
  auto& params = engine->module()->params;
  MixedResult result;
  for (int step = 0; step < steps; ++step) {
    std::vector<at::Tensor> before;
    for (const auto& p : params) {
      before.push_back(p.detach().clone());
    }
    at::Tensor lossSum = at::zeros({1}, at::kDouble);
    for (int64_t m = 0; m < gas; ++m) {
      const int64_t index = (repeatData ? 0 : step * gas) + m;
      auto [x, y] = examples::microBatch(seed, index, micro, dim, engine->rank(), engine->world_size());
      at::Tensor loss = at::mse_loss(engine->forward(x).to(at::kFloat), y);
      // The factor applies to the first micro-step of the step only (with accumulation the others are clean).
      const double f = factor && m == 0 ? factor(engine->rank(), step) : 1.0;
      engine->backward(f == 1.0 ? loss : loss * f);
      engine->step();
      lossSum += loss.detach().to(at::kDouble);
    }
    std::vector<at::Tensor> t{lossSum};
    dist->pg->allreduce(t)->wait();
    StepRecord r;
    r.loss = t[0].item<double>() / static_cast<double>(gas * engine->world_size());
    r.scaleAfter = engine->cur_scale();
    r.skipped = engine->skipped_steps();
    r.lr = engine->get_lr();
    for (size_t i = 0; i < params.size(); ++i) {
      r.paramsChanged = r.paramsChanged || !at::equal(before[i], params[i].detach());
    }
    result.steps.push_back(r);
  }
  for (const auto& p : params) {
    result.finalParams.push_back(p.detach().to(at::kFloat).clone());
    result.numel += p.numel();
  }
  result.masters = engine->strategy().fullParams();
  result.modelStateBytes = engine->model_state_bytes();
  result.offloadedStateBytes = engine->offloaded_state_bytes();
  result.globalSteps = engine->global_steps();
  return result;
}

/// tinyConfig plus `extra` merged on top (e.g. {"fp16": {...}}, {"zero_optimization": {...}}).
inline nlohmann::json withBlocks(nlohmann::json config, const nlohmann::json& extra) {
  config.merge_patch(extra);
  return config;
}

}  // namespace dsrt::testing
