#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <optional>
#include <string>

#include "tests/runtime/core/exactness_harness.h"
#include "tests/runtime/core/thread_world.h"

using namespace dsrt::testing;
using Catch::Matchers::Contains;

namespace {

std::shared_ptr<dsrt::DistContext> singleRank() {
  std::shared_ptr<dsrt::DistContext> dist;
  runThreadWorld(1, [&](int, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) { dist = distFor(0, 1, pg); });
  return dist;
}

}  // namespace

TEST_CASE("stage 0 on 1, 2 and 4 ranks, with and without gradient accumulation and clipping, reproduces a single "
          "process's per-step losses and final parameters",
          "[runtime][core][exactness]") {
  const int steps = 6;
  const int64_t trainBatch = 16;
  for (double clipping : {0.0, 0.05}) {
    const auto reference = trainTinyMlp(tinyConfig(0, trainBatch, trainBatch, clipping), singleRank(), steps);
    // The reference really trains (and the clipped one less fast), so agreement is not trivial.
    REQUIRE(reference.losses.back() < 0.9 * reference.losses.front());
    for (int world : {1, 2, 4}) {
      for (int gas : {1, 2}) {
        if (world == 1 && gas == 1) {
          continue;  // that is the reference itself
        }
        const int64_t micro = trainBatch / (world * gas);
        INFO("world " << world << " gradient_accumulation_steps " << gas << " clipping " << clipping);
        // Catch2 v2 assertions are not thread-safe: ranks only train, the main thread checks.
        std::vector<TrainResult> got(world);
        runThreadWorld(world, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
          got[rank] = trainTinyMlp(tinyConfig(0, trainBatch, micro, clipping), distFor(rank, world, pg), steps);
        });
        for (int rank = 0; rank < world; ++rank) {
          INFO("rank " << rank);
          requireSameTraining(got[rank], reference);
        }
      }
    }
  }
}

TEST_CASE("the engine steps only at accumulation boundaries, follows the LR schedule, counts steps and samples, "
          "holds 16 bytes of model state per parameter at stage 0, and reports misuse",
          "[runtime][core]") {
  auto dist = singleRank();
  dsrt::InitOptions opts;
  opts.dist = dist;
  auto model = std::make_shared<TinyMlp>(4, 8, 1);
  const at::Tensor before = model->params[0].detach().clone();
  auto engine = dsrt::initialize(model, tinyConfig(0, 6, 2), opts);  // 1 rank: 3 accumulation steps
  REQUIRE(engine->gradient_accumulation_steps() == 3);
  // WarmupLR (log warmup 0.001 -> 0.01 over 3 steps): DeepSpeed's scheduler starts at last_batch_iteration
  // -1, where its lr is warmup_min_lr, and advances after every optimizer step.
  CHECK(engine->get_lr() == Approx(0.001));
  std::vector<bool> boundaries;
  for (int micro = 0; micro < 6; ++micro) {
    boundaries.push_back(engine->is_gradient_accumulation_boundary());
    auto [x, y] = dsrt::examples::microBatch(1, micro, 2, 4, 0, 1);
    engine->backward(at::mse_loss(engine->forward(x), y));
    if (micro == 0) {
      REQUIRE_THROWS_WITH(engine->backward(at::mse_loss(engine->forward(x), y)), Contains("called twice"));
    }
    engine->step();
    if (micro < 2) {
      CHECK(engine->module()->params[0].equal(before));  // no update before the boundary
    }
  }
  CHECK(boundaries == std::vector<bool>{false, false, true, false, false, true});
  CHECK(engine->global_steps() == 2);
  CHECK(engine->global_samples() == 12);
  CHECK(engine->micro_steps() == 6);
  CHECK(!engine->module()->params[0].equal(before));
  CHECK(engine->get_lr() == Approx(0.001 + 0.009 * std::log(2.0) / std::log(3.0)));  // last_batch_iteration 1
  int64_t numel = 0;
  for (const auto& p : engine->module()->params) {
    numel += p.numel();
  }
  CHECK(engine->model_state_bytes() == 16 * numel);  // ZeRO paper, fp32 Adam: 4 (p) + 4 (g) + 8 (m, v)
  REQUIRE_THROWS_WITH(engine->step(), Contains("no engine.backward(loss) since the last step"));
  REQUIRE_THROWS_WITH(engine->backward(at::ones({2})), Contains("loss must be a scalar"));

  // Config problems reach the user as c10::Error naming the key.
  auto bad = tinyConfig(0, 6, 4);  // 6 is not 4 * gas * 1
  REQUIRE_THROWS_AS(dsrt::initialize(std::make_shared<TinyMlp>(4, 8, 1), bad, opts), c10::Error);
  REQUIRE_THROWS_WITH(dsrt::initialize(std::make_shared<TinyMlp>(4, 8, 1), bad, opts), Contains("train_batch_size"));
  auto noOptimizer = tinyConfig(0, 6, 2);
  noOptimizer.erase("optimizer");
  noOptimizer.erase("scheduler");
  REQUIRE_THROWS_WITH(dsrt::initialize(std::make_shared<TinyMlp>(4, 8, 1), noOptimizer, opts),
                      Contains("needs an 'optimizer' block"));
  auto stage4 = tinyConfig(4, 6, 2);  // stages 0-3 exist
  REQUIRE_THROWS_WITH(dsrt::initialize(std::make_shared<TinyMlp>(4, 8, 1), stage4, opts),
                      Contains("zero_optimization.stage"));
}

namespace {

// Parameters only (never run forward): a 3 Mi-element tensor broadcast alone, and a 2 Mi one bucketed with
// a small one, so both of broadcastFromRankZero's paths run.
struct BigParams {
  explicit BigParams(int rank) {
    for (int64_t numel : {int64_t{3} << 20, int64_t{2} << 20, int64_t{10}}) {
      params.push_back((at::arange(numel, at::kFloat) * 1e-6 + rank).set_requires_grad(true));
    }
  }
  std::vector<at::Tensor> parameters() const { return params; }
  at::Tensor forward(const at::Tensor& x) { return x; }
  std::vector<at::Tensor> params;
};

}  // namespace

TEST_CASE("every rank starts from rank 0's parameters, whatever each rank initialised", "[runtime][core]") {
  const int stage = GENERATE(0, 2);
  INFO("stage " << stage);
  std::vector<std::vector<at::Tensor>> got(2);
  runThreadWorld(2, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    dsrt::InitOptions opts;
    opts.dist = distFor(rank, 2, pg);
    auto model = std::make_shared<BigParams>(rank);
    auto engine = dsrt::initialize(model, tinyConfig(stage, 4, 2), opts);
    for (const auto& p : model->params) got[rank].push_back(p.detach().clone());
  });
  const BigParams rankZero(0);
  for (int rank = 0; rank < 2; ++rank) {
    for (size_t i = 0; i < rankZero.params.size(); ++i) {
      INFO("rank " << rank << " parameter " << i);
      CHECK(at::equal(got[rank][i], rankZero.params[i].detach()));
    }
  }
}

TEST_CASE("fp16 is refused at initialize exactly where this torch has no float16 matmul on the CPU, naming "
          "fp16.enabled, torch's error and bf16; a model that computes around the kernels may say so",
          "[runtime][core][precision]") {
  // torch's own answer, not the engine's probe (half_kernels_test checks the probe against it).
  std::optional<std::string> torchSays;
  try {
    const at::Tensor one = at::ones({1, 1}, at::kHalf);
    at::addmm(one, one, one);
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    torchSays = what.substr(0, what.find('\n'));
  }
  dsrt::InitOptions opts;
  opts.dist = singleRank();
  auto fp16 = tinyConfig(0, 4, 4);
  fp16["fp16"] = {{"enabled", true}};
  if (torchSays) {
    REQUIRE_THROWS_WITH(dsrt::initialize(std::make_shared<TinyMlp>(4, 8, 1), fp16, opts),
                        Contains("<json>: fp16.enabled: this torch has no float16 kernels for the model on cpu (" +
                                 *torchSays + "), got 'true'") &&
                            Contains("hint: use \"bf16\": {\"enabled\": true} instead of fp16"));
  } else {
    auto engine = dsrt::initialize(std::make_shared<TinyMlp>(4, 8, 1), fp16, opts);
    const at::Tensor loss = engine->forward(at::randn({4, 4}).to(at::kHalf)).to(at::kFloat).pow(2).mean();
    engine->backward(loss);
    engine->step();
    CHECK(engine->global_steps() == 1);
  }
  // Said by the caller, the engine builds the fp16 model on either torch (the forward is then the model's).
  opts.modelAvoidsHalfKernels = true;
  auto engine = dsrt::initialize(std::make_shared<TinyMlp>(4, 8, 1), fp16, opts);
  CHECK(engine->model_dtype() == at::kHalf);
  CHECK(engine->module()->params[0].scalar_type() == at::kHalf);
  // bf16 is the remedy the message names: it is not refused.
  auto bf16 = tinyConfig(0, 4, 4);
  bf16["bf16"] = {{"enabled", true}};
  opts.modelAvoidsHalfKernels = false;
  CHECK(dsrt::initialize(std::make_shared<TinyMlp>(4, 8, 1), bf16, opts)->model_dtype() == at::kBFloat16);
}
