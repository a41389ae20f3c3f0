#pragma once
// Drives ZeRO stage 3 through the engine's call sequence on N thread-ranks with a torch::nn model whose
// forward calls dsrt::zero::forward per layer, so tests can compare it with the single-process
// reference of tests/runtime/zero/zero_run.h (same 7 -> 13 -> 5 -> 1 MLP, same data, same optimizer).

#include "runtime/zero/stage3_forward.h"
#include "runtime/zero/stage3_linear.h"
#include "runtime/zero/stage3_strategy.h"
#include "tests/runtime/zero/zero_run.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <vector>

namespace dsrt::zero::testing {

/// A linear layer computed by dsrt::zero::linear (saves the parameter itself for backward).
struct SavingLinearImpl : torch::nn::Module {
  SavingLinearImpl(const at::Tensor& w, const at::Tensor& b) {
    weight = register_parameter("weight", w.clone());
    bias = register_parameter("bias", b.clone());
  }
  at::Tensor forward(const at::Tensor& x) { return dsrt::zero::linear(x, weight, bias); }
  at::Tensor weight;
  at::Tensor bias;
};
TORCH_MODULE(SavingLinear);

/// initialParams()'s MLP as modules: layers 0 and 2 are SavingLinear, layer 1 a torch::nn::Linear
/// (at::linear, whose saved weight.t() view keeps the gathered storage until backward).
struct Zero3MlpImpl : torch::nn::Module {
  explicit Zero3MlpImpl(const std::vector<at::Tensor>& init)
      : fc0(register_module("fc0", SavingLinear(init[0], init[1]))),
        fc1(register_module("fc1", torch::nn::Linear(init[2].size(1), init[2].size(0)))),
        fc2(register_module("fc2", SavingLinear(init[4], init[5]))) {
    at::NoGradGuard noGrad;
    fc1->weight.copy_(init[2]);
    fc1->bias.copy_(init[3]);
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor h = at::relu(dsrt::zero::forward(fc0, x));
    h = at::relu(dsrt::zero::forward(fc1, h));
    return dsrt::zero::forward(fc2, h);
  }
  SavingLinear fc0;
  torch::nn::Linear fc1;
  SavingLinear fc2;
};
TORCH_MODULE(Zero3Mlp);

/// relu that also runs on CPU fp16 (LibTorch 1.13 has no CPU fp16 clamp): in fp32, rounded back.
inline at::Tensor reluAnyDtype(const at::Tensor& x) {
  return x.scalar_type() == at::kHalf && x.device().is_cpu() ? at::relu(x.to(at::kFloat)).to(at::kHalf) : at::relu(x);
}

/// The same MLP with nested dsrt::zero::forward calls: the outer call gathers layers 0 and 1 together
/// (a unit overlapping the inner calls' units), the inner calls find them gathered.
struct LayerPairImpl : torch::nn::Module {
  explicit LayerPairImpl(const std::vector<at::Tensor>& init)
      : first(register_module("first", SavingLinear(init[0], init[1]))),
        second(register_module("second", SavingLinear(init[2], init[3]))) {}
  at::Tensor forward(const at::Tensor& x) {
    return reluAnyDtype(dsrt::zero::forward(second, reluAnyDtype(dsrt::zero::forward(first, x))));
  }
  SavingLinear first;
  SavingLinear second;
};
TORCH_MODULE(LayerPair);

struct NestedMlpImpl : torch::nn::Module {
  explicit NestedMlpImpl(const std::vector<at::Tensor>& init)
      : pair(register_module("pair", LayerPair(init))), last(register_module("last", SavingLinear(init[4], init[5]))) {}
  at::Tensor forward(const at::Tensor& x) { return dsrt::zero::forward(last, dsrt::zero::forward(pair, x)); }
  LayerPair pair;
  SavingLinear last;
};
TORCH_MODULE(NestedMlp);

/// RunSpec plus the stage3_* settings (defaults: persistence 0, everything partitioned).
struct Stage3Spec {
  RunSpec run;
  int64_t persistence = 0;
  int64_t prefetch = 50000000;
  int64_t maxLive = 1000000000;
  int64_t maxReuse = 1000000000;
  bool nested = false;  ///< NestedMlp instead of Zero3Mlp
  bool offload = false;  ///< offload_optimizer: {device: cpu}
  bool offloadParam = false;  ///< offload_param: {device: cpu} (with offload)
  bool evalForward = false;  ///< a forward under NoGradGuard after every step (evaluation)

  std::string name() const {
    return run.name() + (nested ? " nested" : "") + (offload ? " offload_optimizer" : "") + (offloadParam ? " offload_param" : "") +
           (evalForward ? " eval" : "") + " persistence " + std::to_string(persistence) + " prefetch " + std::to_string(prefetch) +
           " max_live " + std::to_string(maxLive) + " max_reuse " + std::to_string(maxReuse);
  }
};

/// What one rank saw, besides RunResult.
struct Stage3Result {
  RunResult run;
  bool releasedAfterEveryBackward = true;  ///< no non-persistent parameter held data after endBackward
  std::string heldAfterBackward;           ///< the first that did
  int64_t gathers = 0;                     ///< all-gathers launched
  int64_t gatheredNumel = 0;
  int64_t peakLiveNumel = 0;
  bool planned = false;
};

inline StrategyContext stage3Context(const Stage3Spec& spec, std::vector<at::Tensor> params,
                                     const c10::intrusive_ptr<c10d::ProcessGroup>& pg, int rank) {
  StrategyContext ctx;
  ctx.params = std::move(params);
  ctx.pg = pg;
  ctx.rank = rank;
  ctx.worldSize = spec.run.worldSize;
  ctx.reduceBucketNumel = spec.run.bucketNumel;
  ctx.allgatherBucketNumel = spec.run.allgatherNumel;
  ctx.overlapComm = spec.run.overlapComm;
  ctx.reduceScatter = spec.run.reduceScatter;
  ctx.stage3PrefetchBucketNumel = spec.prefetch;
  ctx.stage3ParamPersistenceThreshold = spec.persistence;
  ctx.stage3MaxLiveParameters = spec.maxLive;
  ctx.stage3MaxReuseDistance = spec.maxReuse;
  ctx.offloadOptimizer = spec.offload;
  ctx.offloadParam = spec.offloadParam;
  auto ospec = spec.run.optimizerSpec();
  ctx.makeOptimizer = [ospec](at::Tensor flat) { return optim::makeFlatOptimizer(ospec, flat.numel()); };
  return ctx;
}

/// Trains Zero3Mlp with stage 3 on spec.run.worldSize thread-ranks; one result per rank. Final
/// parameters come from fullParams() (the model's own tensors are released).
inline std::vector<Stage3Result> stage3Run(const Stage3Spec& spec, const RunHooks& hooks = RunHooks()) {
  const RunSpec& rs = spec.run;
  Data data = makeData(RunSpec::kGlobalBatch * rs.steps);
  auto init = initialParams();
  std::vector<Stage3Result> results(static_cast<size_t>(rs.worldSize));
  const int64_t micro = RunSpec::kGlobalBatch / (rs.worldSize * rs.gas);
  runRanks(rs.worldSize, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    Zero3Mlp flat(init);
    NestedMlp nested(init);
    auto forward = [&](const at::Tensor& x) { return spec.nested ? nested->forward(x) : flat->forward(x); };
    auto params = spec.nested ? nested->parameters() : flat->parameters();
    StrategyContext ctx = stage3Context(spec, params, pg, rank);
    if (hooks.configure) {
      hooks.configure(rank, ctx);
    }
    Stage3Strategy strategy(std::move(ctx));
    Stage3Result& out = results[static_cast<size_t>(rank)];
    for (int s = 0; s < rs.steps; ++s) {
      double lossSum = 0;
      for (int m = 0; m < rs.gas; ++m) {
        const bool boundary = m + 1 == rs.gas;
        const int64_t first = s * RunSpec::kGlobalBatch + (m * rs.worldSize + rank) * micro;
        if (hooks.onEvent) {
          hooks.onEvent(rank, "micro-step begins");
        }
        strategy.beginBackward(boundary);
        at::Tensor loss = at::mse_loss(forward(data.x.narrow(0, first, micro)), data.y.narrow(0, first, micro));
        (loss / rs.gas).backward();
        strategy.endBackward(boundary);
        if (hooks.onEvent) {
          hooks.onEvent(rank, "micro-step ends");
        }
        lossSum += loss.item<double>() / rs.gas;
        for (size_t i = 0; i < params.size(); ++i) {
          if (!strategy.coordinator().persistent(static_cast<int64_t>(i)) && params[i].numel() != 0 &&
              out.releasedAfterEveryBackward) {
            out.releasedAfterEveryBackward = false;
            out.heldAfterBackward = "parameter " + std::to_string(i) + " at step " + std::to_string(s);
          }
        }
      }
      double norm = strategy.gradNorm();
      strategy.step(RunSpec::kLr, clipScaleFor(norm, rs.clip));
      strategy.zeroGrad();
      std::vector<at::Tensor> t{at::full({1}, lossSum, at::kDouble)};
      pg->allreduce(t)->wait();
      out.run.losses.push_back(t[0].item<double>() / rs.worldSize);
      out.run.norms.push_back(norm);
      if (spec.evalForward) {
        at::NoGradGuard noGrad;
        forward(data.x.narrow(0, 0, 4));
      }
    }
    out.run.params = strategy.fullParams();
    out.run.modelStateBytes = strategy.modelStateBytes();
    out.gathers = strategy.coordinator().gatherer().launches();
    out.gatheredNumel = strategy.coordinator().gatherer().gatheredNumel();
    out.peakLiveNumel = strategy.coordinator().peakLiveNumel();
    out.planned = strategy.coordinator().planned();
  });
  return results;
}

}  // namespace dsrt::zero::testing
