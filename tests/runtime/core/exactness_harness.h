#pragma once
// Exactness harness for every data-parallel strategy (stage 0 here; ZeRO 1/2 in tests/runtime/zero/):
// trainTinyMlp() trains a small tanh MLP through dsrt::initialize on the synthetic task of
// examples/synthetic_task.h and returns the per-step global-batch losses and the final parameters, so a
// multi-rank run (runThreadWorld, tests/runtime/core/thread_world.h) can be compared with a single
// process: same seed, same global batch, relative difference below 1e-5. Header-only; link dsrt.
//
//   auto ref = trainTinyMlp(tinyConfig(/*stage*/1, /*trainBatch*/16, /*micro*/16), singleRankDist(), 5);
//   runThreadWorld(2, [&](int rank, auto pg) {
//     auto got = trainTinyMlp(tinyConfig(1, 16, 8), distFor(rank, 2, pg), 5);
//     requireSameTraining(got, ref);
//   });

#include <ATen/ATen.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>
#include <vector>

#include "examples/synthetic_task.h"
#include "runtime/runtime.h"
#include "tests/runtime/core/thread_world.h"

namespace dsrt::testing {

/// A model without torch::nn (keeps test compile times low): dim -> hidden -> hidden -> dim, tanh.
struct TinyMlp {
  TinyMlp(int64_t dim, int64_t hidden, uint64_t seed) {
    auto gen = at::detail::createCPUGenerator(seed);
    auto make = [&](std::vector<int64_t> shape, double scale) {
      return (at::rand(shape, gen) * 2.0 - 1.0).mul_(scale).set_requires_grad(true);
    };
    params = {make({hidden, dim}, 1.0 / std::sqrt(double(dim))), make({hidden}, 0.1),
              make({hidden, hidden}, 1.0 / std::sqrt(double(hidden))), make({hidden}, 0.1),
              make({dim, hidden}, 1.0 / std::sqrt(double(hidden))), make({dim}, 0.1)};
  }
  std::vector<at::Tensor> parameters() const { return params; }
  at::Tensor forward(const at::Tensor& x) {
    auto h = at::tanh(at::linear(x, params[0], params[1]));
    h = at::tanh(at::linear(h, params[2], params[3]));
    return at::linear(h, params[4], params[5]);
  }
  std::vector<at::Tensor> params;
};

struct TrainResult {
  std::vector<double> losses;            ///< per optimizer step, averaged over the global batch
  std::vector<at::Tensor> finalParams;   ///< clones after the last step
  int64_t modelStateBytes = 0;
  int64_t numel = 0;                     ///< parameters in the model
};

/// A ds_config for the tiny MLP: Adam with WarmupLR, optional clipping, `stage`, small buckets so several
/// reductions happen per backward.
inline nlohmann::json tinyConfig(int stage, int64_t trainBatch, int64_t microBatch, double clipping = 0.0) {
  return nlohmann::json{
      {"train_batch_size", trainBatch},
      {"train_micro_batch_size_per_gpu", microBatch},
      {"gradient_clipping", clipping},
      {"optimizer", {{"type", "Adam"}, {"params", {{"lr", 0.01}, {"weight_decay", 0.01}}}}},
      {"scheduler",
       {{"type", "WarmupLR"}, {"params", {{"warmup_min_lr", 0.001}, {"warmup_max_lr", 0.01}, {"warmup_num_steps", 3}}}}},
      {"zero_optimization", {{"stage", stage}, {"reduce_bucket_size", 300}, {"allgather_bucket_size", 300}}},
  };
}

/// A DistContext over an existing group (from runThreadWorld) or a fresh single-rank Gloo group.
inline std::shared_ptr<DistContext> distFor(int rank, int worldSize, c10::intrusive_ptr<c10d::ProcessGroup> pg) {
  auto ctx = std::make_shared<DistContext>();
  ctx->env.rank = rank;
  ctx->env.worldSize = worldSize;
  ctx->pg = std::move(pg);
  ctx->backend = "gloo";
  return ctx;
}

/// Trains optimizer step `step` (all its micro-steps) on the synthetic task and returns the loss averaged
/// over the global batch (allreduced, so every rank returns the same value).
template <typename EngineT>
double trainOneStep(EngineT& engine, uint64_t seed, int64_t step, int64_t dim) {
  const int64_t gas = engine.gradient_accumulation_steps();
  const int64_t micro = engine.train_micro_batch_size_per_gpu();
  at::Tensor lossSum = at::zeros({1}, at::kDouble);
  for (int64_t m = 0; m < gas; ++m) {
    auto [x, y] = examples::microBatch(seed, step * gas + m, micro, dim, engine.rank(), engine.world_size());
    at::Tensor loss = at::mse_loss(engine.forward(x), y);
    engine.backward(loss);
    engine.step();
    lossSum += loss.detach().to(at::kDouble);
  }
  std::vector<at::Tensor> t{lossSum};
  engine.dist()->pg->allreduce(t)->wait();
  return t[0].item<double>() / static_cast<double>(gas * engine.world_size());
}

/// Trains `steps` optimizer steps; every rank returns the same losses (allreduced).
inline TrainResult trainTinyMlp(const nlohmann::json& config, const std::shared_ptr<DistContext>& dist, int steps,
                                uint64_t seed = 7, int64_t dim = 12, int64_t hidden = 24) {
  InitOptions opts;
  opts.dist = dist;
  auto engine = initialize(std::make_shared<TinyMlp>(dim, hidden, seed), config, opts);
  TrainResult result;
  for (int step = 0; step < steps; ++step) {
    result.losses.push_back(trainOneStep(*engine, seed, step, dim));
  }
  for (const auto& p : engine->module()->params) {
    result.finalParams.push_back(p.detach().clone());
    result.numel += p.numel();
  }
  result.modelStateBytes = engine->model_state_bytes();
  return result;
}

/// Losses and final parameters agree with the reference within relative difference `tol`.
inline void requireSameTraining(const TrainResult& got, const TrainResult& ref, double tol = 1e-5) {
  REQUIRE(got.losses.size() == ref.losses.size());
  for (size_t s = 0; s < ref.losses.size(); ++s) {
    INFO("step " << s + 1 << " loss " << got.losses[s] << " reference " << ref.losses[s]);
    CHECK(std::abs(got.losses[s] - ref.losses[s]) <= tol * std::abs(ref.losses[s]));
  }
  REQUIRE(got.finalParams.size() == ref.finalParams.size());
  for (size_t i = 0; i < ref.finalParams.size(); ++i) {
    const double diff = (got.finalParams[i] - ref.finalParams[i]).norm().item<double>();
    const double norm = ref.finalParams[i].norm().item<double>();
    INFO("parameter " << i << " relative difference " << diff / norm);
    CHECK(diff <= tol * norm);
  }
}

}  // namespace dsrt::testing
