// Engine::load_checkpoint's LoadCheckpointOptions and save_checkpoint's saveLatest (DeepSpeed's
// load_module_only / load_optimizer_states / load_lr_scheduler_states / save_latest): a weights-only load
// on another world size gives exactly a fresh engine built from those weights; the switches restore
// counters, scheduler and optimizer state as DeepSpeed's _load_checkpoint does.

#include <ATen/ATen.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "runtime/optim/flat_optimizer.h"
#include "tests/common/temp_dir.h"
#include "tests/runtime/core/exactness_harness.h"

namespace dsrt::testing {
namespace {

constexpr int64_t kTrainBatch = 12;
constexpr int64_t kMicroBatch = 2;
constexpr uint64_t kData = 21;

struct Probe {
  std::vector<at::Tensor> params;      ///< right after the load (or the save)
  std::vector<double> losses;          ///< of the steps trained after it
  int64_t globalSteps = 0;
  int64_t optimizerSteps = 0;
  double lr = 0.0;
  nlohmann::json engineState;
  nlohmann::json clientState;
};

std::vector<at::Tensor> clones(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  for (const auto& t : ts) out.push_back(t.detach().clone());
  return out;
}

/// On `world` thread ranks: builds a model (seed 5, or `weights` copied in before initialize), saves
/// after 3 steps to DIR/pre (saveLatest false) when `save`, else loads DIR/pre with `options` when
/// `load`; then trains `after` steps. Returns rank 0's view.
Probe run(int stage, int world, const std::string& dir, bool save, bool load, const LoadCheckpointOptions& options,
          int after, const std::vector<at::Tensor>& weights = {}) {
  std::vector<Probe> out(world);
  runThreadWorld(world, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    InitOptions opts;
    opts.dist = distFor(rank, world, pg);
    auto model = std::make_shared<TinyMlp>(12, 24, save ? 3 : 5);
    for (size_t i = 0; i < weights.size(); ++i) {
      at::NoGradGuard noGrad;
      model->params[i].copy_(weights[i]);
    }
    auto engine = initialize(model, tinyConfig(stage, kTrainBatch, kMicroBatch), opts);
    Probe& p = out[rank];
    if (save) {
      for (int64_t step = 0; step < 3; ++step) trainOneStep(*engine, kData, step, 12);
      engine->save_checkpoint(dir, std::string("pre"), nlohmann::json{{"epoch", 2}}, /*saveLatest=*/false);
    } else if (load) {
      auto loaded = engine->load_checkpoint(dir, std::string("pre"), options);
      p.engineState = loaded.engineState;
      p.clientState = loaded.clientState;
    }
    p.params = clones(engine->module()->params);
    p.globalSteps = engine->global_steps();
    p.optimizerSteps = engine->strategy().optimizer().stepCount();
    p.lr = engine->get_lr();
    for (int i = 0; i < after; ++i) p.losses.push_back(trainOneStep(*engine, kData, 10 + i, 12));
  });
  return out[0];
}

void requireEqual(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("parameter " << i);
    CHECK(at::equal(got[i], want[i]));
  }
}

}  // namespace

TEST_CASE("saveLatest=false commits the tag and leaves latest alone", "[engine][checkpoint]") {
  const TempDir tmp;
  const std::string dir = tmp.path() + "/ckpt";
  run(2, 2, dir, true, false, {}, 0);
  CHECK(std::filesystem::is_directory(dir + "/pre"));
  CHECK_FALSE(std::filesystem::exists(dir + "/latest"));
}

TEST_CASE("moduleOnly on another world size loads the weights into a fresh engine", "[engine][checkpoint]") {
  auto [stage, loadWorld] = GENERATE(table<int, int>({{0, 1}, {1, 3}, {2, 3}, {2, 1}}));
  INFO("stage " << stage << ", saved on 2 ranks, loaded on " << loadWorld);
  const TempDir tmp;
  const std::string dir = tmp.path() + "/ckpt";
  const Probe saved = run(stage, 2, dir, true, false, {}, 0);
  LoadCheckpointOptions moduleOnly;
  moduleOnly.moduleOnly = true;
  const Probe loaded = run(stage, loadWorld, dir, false, true, moduleOnly, 3);
  const Probe fresh = run(stage, loadWorld, dir, false, false, {}, 3, saved.params);
  requireEqual(loaded.params, saved.params);
  CHECK(loaded.globalSteps == 0);
  CHECK(loaded.optimizerSteps == 0);
  CHECK(loaded.lr == fresh.lr);
  CHECK(loaded.engineState.at("global_steps") == 3);
  CHECK(loaded.clientState == nlohmann::json{{"epoch", 2}});
  CHECK(loaded.losses == fresh.losses);  // same world, same weights, fresh optimizer: bit for bit
}

TEST_CASE("optimizerStates=false restores counters and schedule, not the optimizer", "[engine][checkpoint]") {
  const TempDir tmp;
  const std::string dir = tmp.path() + "/ckpt";
  run(2, 2, dir, true, false, {}, 0);
  LoadCheckpointOptions noOptimizer;
  noOptimizer.optimizerStates = false;
  const Probe partial = run(2, 2, dir, false, true, noOptimizer, 1);
  const Probe full = run(2, 2, dir, false, true, {}, 1);
  CHECK(partial.globalSteps == 3);
  CHECK(partial.lr == full.lr);
  CHECK(partial.optimizerSteps == 0);
  CHECK(full.optimizerSteps == 3);
  requireEqual(partial.params, full.params);
  CHECK(partial.losses == full.losses);  // the first loss is computed before any step
}

TEST_CASE("lrSchedulerStates=false restores counters and optimizer, not the schedule", "[engine][checkpoint]") {
  const TempDir tmp;
  const std::string dir = tmp.path() + "/ckpt";
  run(1, 2, dir, true, false, {}, 0);
  LoadCheckpointOptions noScheduler;
  noScheduler.lrSchedulerStates = false;
  const Probe partial = run(1, 2, dir, false, true, noScheduler, 0);
  const Probe full = run(1, 2, dir, false, true, {}, 0);
  const Probe fresh = run(1, 2, dir, false, false, {}, 0);
  CHECK(partial.globalSteps == 3);
  CHECK(partial.optimizerSteps == 3);
  CHECK(partial.lr == fresh.lr);
  CHECK(partial.lr != full.lr);
}

}  // namespace dsrt::testing
