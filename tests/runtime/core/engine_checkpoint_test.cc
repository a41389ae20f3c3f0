// engine.save_checkpoint / load_checkpoint (runtime/engine_checkpoint.cc): a run saved on N ranks and
// resumed on M ranks continues with the losses, learning rates, counters and parameters of an
// uninterrupted run; the client state comes back; a missing checkpoint is reported, never guessed.

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runtime/checkpoint/consolidate.h"
#include "runtime/optim/flat_optimizer.h"
#include "tests/common/temp_dir.h"
#include "tests/runtime/core/exactness_harness.h"

namespace dsrt::testing {
namespace {

constexpr int kSteps = 6;
constexpr int kSaveAfter = 3;
constexpr int64_t kTrainBatch = 16;
constexpr int64_t kMicroBatch = 4;  // 4 ranks: no accumulation; 2 ranks: 2 micro-steps; 1 rank: 4

struct Segment {
  std::vector<double> losses;  ///< of the steps this run trained (after any load)
  std::vector<double> lrs;     ///< get_lr() after each of those steps
  std::vector<at::Tensor> finalParams;
  int64_t globalSteps = 0;
  int64_t globalSamples = 0;
  nlohmann::json clientState;
  std::string loadedPath;
};

// Trains until global step kSteps; loads LOAD_DIR first if given, saves to SAVE_DIR after step kSaveAfter
// if given (and then stops: the "interrupted" run).
Segment train(int stage, const std::shared_ptr<DistContext>& dist, const std::optional<std::string>& loadDir,
              const std::optional<std::string>& saveDir, uint64_t seed = 11) {
  InitOptions opts;
  opts.dist = dist;
  auto config = tinyConfig(stage, kTrainBatch, kMicroBatch, /*clipping*/ 0.5);
  auto engine = initialize(std::make_shared<TinyMlp>(12, 24, seed), config, opts);
  Segment out;
  if (loadDir) {
    auto loaded = engine->load_checkpoint(*loadDir);
    out.loadedPath = loaded.path;
    out.clientState = loaded.clientState;
  }
  for (int64_t step = engine->global_steps(); step < kSteps; ++step) {
    out.losses.push_back(trainOneStep(*engine, seed, step, 12));
    out.lrs.push_back(engine->get_lr());
    if (saveDir && engine->global_steps() == kSaveAfter) {
      engine->save_checkpoint(*saveDir, std::nullopt, nlohmann::json{{"epoch", 2}, {"note", "after step 3"}});
      break;
    }
  }
  for (const auto& p : engine->module()->params) out.finalParams.push_back(p.detach().clone());
  out.globalSteps = engine->global_steps();
  out.globalSamples = engine->global_samples();
  return out;
}

// Runs `fn(rank, dist)` on `world` thread ranks and returns rank 0's result.
template <typename Fn>
Segment onRanks(int world, Fn fn) {
  std::vector<Segment> results(world);
  runThreadWorld(world, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    results[rank] = fn(distFor(rank, world, pg));
  });
  return results[0];
}

}  // namespace

TEST_CASE("a run saved on N ranks and loaded on M ranks continues exactly like an uninterrupted run",
          "[engine][checkpoint]") {
  auto [stage, saveWorld, loadWorld] = GENERATE(table<int, int, int>({
      {0, 2, 1}, {0, 1, 4}, {1, 4, 2}, {1, 2, 4}, {2, 4, 2}, {2, 2, 4}, {2, 1, 2}}));
  INFO("stage " << stage << ", saved on " << saveWorld << " ranks, loaded on " << loadWorld);
  const TempDir tmp;
  const std::string dir = tmp.path() + "/ckpt";
  const Segment whole = onRanks(1, [&](auto dist) { return train(stage, dist, std::nullopt, std::nullopt); });
  const Segment first = onRanks(saveWorld, [&](auto dist) { return train(stage, dist, std::nullopt, dir); });
  REQUIRE(first.globalSteps == kSaveAfter);
  REQUIRE(std::filesystem::exists(dir + "/latest"));
  const Segment rest = onRanks(loadWorld, [&](auto dist) { return train(stage, dist, dir, std::nullopt); });

  CHECK(rest.loadedPath == dir + "/global_step3");
  CHECK(rest.clientState == nlohmann::json({{"epoch", 2}, {"note", "after step 3"}}));
  CHECK(rest.globalSteps == kSteps);
  CHECK(rest.globalSamples == kSteps * kTrainBatch);
  REQUIRE(rest.losses.size() == kSteps - kSaveAfter);
  for (size_t i = 0; i < rest.losses.size(); ++i) {
    const size_t s = kSaveAfter + i;
    INFO("step " << s + 1 << ": resumed " << rest.losses[i] << ", uninterrupted " << whole.losses[s]);
    CHECK(std::abs(rest.losses[i] - whole.losses[s]) <= 1e-5 * std::abs(whole.losses[s]));
    CHECK(rest.lrs[i] == Approx(whole.lrs[s]).epsilon(1e-12));
  }
  for (size_t i = 0; i < whole.finalParams.size(); ++i) {
    const double diff = (rest.finalParams[i] - whole.finalParams[i]).norm().item<double>();
    INFO("parameter " << i << " relative difference " << diff / whole.finalParams[i].norm().item<double>());
    CHECK(diff <= 1e-5 * whole.finalParams[i].norm().item<double>());
  }
}

TEST_CASE("load_checkpoint of a directory without a latest file trains from scratch", "[engine][checkpoint]") {
  const TempDir tmp;
  const std::string& dir = tmp.path();
  const Segment fresh = onRanks(1, [&](auto dist) { return train(2, dist, std::nullopt, std::nullopt); });
  const Segment loaded = onRanks(1, [&](auto dist) { return train(2, dist, dir, std::nullopt); });
  CHECK(loaded.loadedPath.empty());
  CHECK(loaded.losses == fresh.losses);
}

TEST_CASE("load_checkpoint of a missing tag or another stage's checkpoint fails naming the file",
          "[engine][checkpoint]") {
  const TempDir tmp;
  const std::string dir = tmp.path() + "/ckpt";
  onRanks(2, [&](auto dist) { return train(2, dist, std::nullopt, dir); });
  auto loadWith = [&](int stage, const std::string& tag) {
    runThreadWorld(1, [&](int, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
      InitOptions opts;
      opts.dist = distFor(0, 1, pg);
      auto engine = initialize(std::make_shared<TinyMlp>(12, 24, 11), tinyConfig(stage, kTrainBatch, kMicroBatch), opts);
      engine->load_checkpoint(dir, tag);
    });
  };
  CHECK_THROWS_WITH(loadWith(2, "global_step9"), Catch::Contains(dir + "/global_step9"));
  CHECK_THROWS_WITH(loadWith(0, "global_step3"),
                    Catch::Contains("mp_rank_00_model_states.pt") && Catch::Contains("stage 2"));
}

TEST_CASE("save_16bit_model and ds_to_fp32's consolidation both give the live model's parameters",
          "[engine][checkpoint]") {
  const int stage = GENERATE(0, 1, 2);
  INFO("stage " << stage);
  const TempDir tmp;
  const std::string dir = tmp.path() + "/ckpt";
  std::vector<std::vector<at::Tensor>> live(2);
  std::vector<int> saved(2, -1);
  runThreadWorld(2, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    InitOptions opts;
    opts.dist = distFor(rank, 2, pg);
    auto engine = initialize(std::make_shared<TinyMlp>(12, 24, 3), tinyConfig(stage, kTrainBatch, kMicroBatch), opts);
    for (int64_t m = 0; m < engine->gradient_accumulation_steps(); ++m) {
      auto [x, y] = examples::microBatch(3, m, kMicroBatch, 12, rank, 2);
      engine->backward(at::mse_loss(engine->forward(x), y));
      engine->step();
    }
    saved[rank] = engine->save_16bit_model(dir) ? 1 : 0;
    engine->save_checkpoint(dir);
    for (const auto& p : engine->module()->params) live[rank].push_back(p.detach().clone());
  });
  CHECK(saved == std::vector<int>{1, 1});
  const auto model = checkpoint::readStateDictFile(dir + "/pytorch_model.bin");
  const auto fp32 = checkpoint::consolidateFp32(dir);
  REQUIRE(model.size() == live[0].size());
  REQUIRE(fp32.size() == live[0].size());
  for (size_t i = 0; i < live[0].size(); ++i) {
    INFO("parameter " << i);
    CHECK(model[i].first == "param." + std::to_string(i));
    CHECK(at::equal(model[i].second, live[0][i]));
    CHECK(at::equal(fp32[i].second, live[0][i]));
    CHECK(at::equal(live[1][i], live[0][i]));
  }
}

}  // namespace dsrt::testing
