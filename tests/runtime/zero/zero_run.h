#pragma once
// Drives a ZeRO strategy through the engine's call sequence (GradStrategy: beginBackward, backward,
// endBackward per micro-step; gradNorm, step, zeroGrad at the boundary) on N thread-ranks, and the
// same training as one plain process with torch::optim, so tests can compare the two.

#include "runtime/grad_strategy.h"
#include "runtime/optim/flat_optimizer.h"
#include "tests/runtime/core/thread_world.h"
#include "tests/runtime/zero/zero_test_model.h"

#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dsrt::zero::testing {

/// runThreadWorld, plus a barrier before each rank tears its process group down: a rank that leaves
/// while a peer is still setting up its Gloo pairs makes the peer throw "Connection closed by peer"
/// (seen once in 20 runs of the model_state_bytes case, whose ranks communicate nothing else).
inline void runRanks(int worldSize, const dsrt::testing::RankFn& fn) {
  dsrt::testing::runThreadWorld(worldSize, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    fn(rank, pg);
    pg->barrier()->wait();
  });
}

/// One training configuration. The global batch is fixed, so every (worldSize, gas) sees the same data.
struct RunSpec {
  int stage = 1;
  int worldSize = 1;
  int gas = 1;                 ///< gradient_accumulation_steps
  bool adam = true;            ///< Adam (with weight decay) or SGD with momentum
  bool reduceScatter = true;
  bool overlapComm = true;
  int64_t bucketNumel = 40;    ///< small, so the 180-parameter model gets several buckets
  int64_t allgatherNumel = 24; ///< small, so the all-gather is sharded
  double clip = 0.0;           ///< gradient_clipping (0 = off)
  int steps = 4;
  static constexpr int64_t kGlobalBatch = 24;
  static constexpr double kLr = 0.05;

  std::string name() const {
    return "stage " + std::to_string(stage) + " world " + std::to_string(worldSize) + " gas " + std::to_string(gas) +
           (adam ? " adam" : " sgd") + (reduceScatter ? " reduce_scatter" : " allreduce") +
           (overlapComm ? " overlap" : " no-overlap") + " clip " + std::to_string(clip);
  }
  optim::OptimizerSpec optimizerSpec() const {
    optim::OptimizerSpec s;
    s.kind = adam ? optim::OptimizerKind::kAdam : optim::OptimizerKind::kSgd;
    s.weightDecay = adam ? 0.01 : 0.0;
    s.momentum = adam ? 0.0 : 0.9;
    s.numThreads = 1;
    return s;
  }
};

/// Tests of the accelerator paths on CPU tensors: `configure` adjusts each rank's StrategyContext before the
/// strategy is built (offload, testStreams); `onEvent` hears "micro-step begins" / "micro-step ends" around
/// each micro-step's beginBackward ... endBackward. Empty functions: nothing.
struct RunHooks {
  std::function<void(int rank, StrategyContext& ctx)> configure;
  std::function<void(int rank, const char* event)> onEvent;
};

/// What one run produced: per-step global losses and gradient norms, and the final parameters.
struct RunResult {
  std::vector<double> losses;
  std::vector<double> norms;
  std::vector<at::Tensor> params;
  int64_t modelStateBytes = 0;
};

inline double clipScaleFor(double norm, double clip) {
  // DeepSpeed's unscale_and_clip_grads / torch's clip_grad_norm_: scale by clip / (norm + 1e-6) if < 1.
  if (clip <= 0.0) {
    return 1.0;
  }
  double coef = clip / (norm + 1e-6);
  return coef < 1.0 ? coef : 1.0;
}

/// The single-process reference: whole global batch, torch::optim.
inline RunResult referenceRun(const RunSpec& spec) {
  Data data = makeData(RunSpec::kGlobalBatch * spec.steps);
  auto p = replicate(initialParams());
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (spec.adam) {
    opt = std::make_unique<torch::optim::Adam>(p, torch::optim::AdamOptions(RunSpec::kLr).weight_decay(0.01));
  } else {
    opt = std::make_unique<torch::optim::SGD>(p, torch::optim::SGDOptions(RunSpec::kLr).momentum(0.9));
  }
  RunResult r;
  for (int s = 0; s < spec.steps; ++s) {
    opt->zero_grad();
    at::Tensor loss = mlpLoss(p, data.x.narrow(0, s * RunSpec::kGlobalBatch, RunSpec::kGlobalBatch),
                              data.y.narrow(0, s * RunSpec::kGlobalBatch, RunSpec::kGlobalBatch));
    loss.backward();
    double sq = 0;
    for (auto& t : p) {
      sq += t.grad().pow(2).sum().item<double>();
    }
    double norm = std::sqrt(sq);
    double scale = clipScaleFor(norm, spec.clip);
    if (scale != 1.0) {
      for (auto& t : p) {
        t.mutable_grad().mul_(scale);
      }
    }
    opt->step();
    r.losses.push_back(loss.item<double>());
    r.norms.push_back(norm);
  }
  for (auto& t : p) {
    r.params.push_back(t.detach().clone());
  }
  return r;
}

/// The same training with `spec.stage` on spec.worldSize thread-ranks; one result per rank.
/// `skipOnRank1` >= 0 leaves that layer's bias unused on rank 1 only.
inline std::vector<RunResult> zeroRun(const RunSpec& spec, int skipOnRank1 = -1, const RunHooks& hooks = RunHooks()) {
  Data data = makeData(RunSpec::kGlobalBatch * spec.steps);
  auto init = initialParams();
  std::vector<RunResult> results(static_cast<size_t>(spec.worldSize));
  const int64_t micro = RunSpec::kGlobalBatch / (spec.worldSize * spec.gas);
  runRanks(spec.worldSize, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    auto p = replicate(init);
    StrategyContext ctx;
    ctx.params = p;
    ctx.pg = pg;
    ctx.rank = rank;
    ctx.worldSize = spec.worldSize;
    ctx.reduceBucketNumel = spec.bucketNumel;
    ctx.allgatherBucketNumel = spec.allgatherNumel;
    ctx.overlapComm = spec.overlapComm;
    ctx.reduceScatter = spec.reduceScatter;
    auto ospec = spec.optimizerSpec();
    ctx.makeOptimizer = [ospec](at::Tensor flat) { return optim::makeFlatOptimizer(ospec, flat.numel()); };
    if (hooks.configure) {
      hooks.configure(rank, ctx);
    }
    auto strategy = makeGradStrategy(spec.stage, ctx);
    RunResult& r = results[static_cast<size_t>(rank)];
    for (int s = 0; s < spec.steps; ++s) {
      double lossSum = 0;
      for (int m = 0; m < spec.gas; ++m) {
        const bool boundary = m + 1 == spec.gas;
        const int64_t first = s * RunSpec::kGlobalBatch + (m * spec.worldSize + rank) * micro;
        if (hooks.onEvent) {
          hooks.onEvent(rank, "micro-step begins");
        }
        strategy->beginBackward(boundary);
        at::Tensor loss = mlpLoss(p, data.x.narrow(0, first, micro), data.y.narrow(0, first, micro),
                                  rank == 1 ? skipOnRank1 : -1);
        (loss / spec.gas).backward();
        strategy->endBackward(boundary);
        if (hooks.onEvent) {
          hooks.onEvent(rank, "micro-step ends");
        }
        lossSum += loss.item<double>() / spec.gas;
      }
      double norm = strategy->gradNorm();
      strategy->step(RunSpec::kLr, clipScaleFor(norm, spec.clip));
      strategy->zeroGrad();
      std::vector<at::Tensor> t{at::full({1}, lossSum, at::kDouble)};
      pg->allreduce(t)->wait();
      r.losses.push_back(t[0].item<double>() / spec.worldSize);
      r.norms.push_back(norm);
    }
    for (auto& t : p) {
      r.params.push_back(t.detach().clone());
    }
    r.modelStateBytes = strategy->modelStateBytes();
  });
  return results;
}

/// Largest per-tensor relative difference max|a - b| / max|b| (the L-infinity relative error). Per
/// element it would be ill-conditioned: a weight that Adam walks through zero (0.14 -> -0.0006 here)
/// keeps an absolute rounding difference of ~1e-8 from the ordering of the gradient sums, which the
/// fp32 single-process run itself shows against an fp64 run of the same training.
inline double maxRelDiff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max(b[i].abs().max().item<double>(), 1e-12);
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>() / scale);
  }
  return worst;
}

inline double relDiff(double a, double b) {
  return std::abs(a - b) / std::max(std::abs(b), 1e-12);
}

}  // namespace dsrt::zero::testing
