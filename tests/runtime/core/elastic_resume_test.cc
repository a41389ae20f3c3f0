// Resume at another world size: a run that saves on N ranks after step k
// and resumes on M ranks (4 -> 3, 3 -> 2, 2 -> 4) trains steps k+1..K like an uninterrupted run at the
// same global batch, for ZeRO stages 0-3, offload_optimizer (stages 1-3), offload_param (stage 3), fp16
// with its dynamic loss scaler, and a batch set by an elasticity block (micro batch and accumulation
// recomputed for each world size), with no offline conversion. The model is tests/runtime/zero's NestedMlp
// (every layer through dsrt::zero::forward), so one model runs at every stage and in fp16 on the CPU.

#include <ATen/ATen.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "runtime/progress_file.h"
#include "tests/common/temp_dir.h"
#include "tests/runtime/core/exactness_harness.h"
#include "tests/runtime/zero/stage3_run.h"

namespace dsrt::testing {
namespace {

constexpr int kSteps = 6;
constexpr int kSaveAfter = 3;
constexpr int64_t kTrainBatch = 24;  // micro batch 2: gradient accumulation 12, 6, 4, 3 on 1, 2, 3, 4 ranks
constexpr int64_t kMicroBatch = 2;

/// One configuration the resume must hold for.
struct Variant {
  std::string name;
  int stage = 0;
  bool offloadOptimizer = false;
  bool offloadParam = false;
  bool fp16 = false;
  bool elastic = false;  ///< the batch comes from an elasticity block instead of train_batch_size
};

nlohmann::json configFor(const Variant& v) {
  nlohmann::json config{
      {"train_batch_size", kTrainBatch},
      {"train_micro_batch_size_per_gpu", kMicroBatch},
      {"gradient_clipping", 1.0},
      {"optimizer", {{"type", "Adam"}, {"params", {{"lr", 0.02}, {"weight_decay", 0.01}}}}},
      {"scheduler",
       {{"type", "WarmupLR"}, {"params", {{"warmup_min_lr", 0.002}, {"warmup_max_lr", 0.02}, {"warmup_num_steps", 4}}}}},
      {"zero_optimization",
       {{"stage", v.stage}, {"reduce_bucket_size", 40}, {"stage3_param_persistence_threshold", 5},
        {"stage3_prefetch_bucket_size", 80}, {"stage3_max_reuse_distance", 0}}},
  };
  if (v.elastic) {
    // Global batch 24 at 1-4 ranks; micro x accumulation 4x6, 4x3, 4x2, 2x3 (runtime/config/elasticity.h).
    config.erase("train_batch_size");
    config.erase("train_micro_batch_size_per_gpu");
    config["elasticity"] = {{"enabled", true}, {"max_train_batch_size", kTrainBatch}, {"micro_batch_sizes", {2, 4}},
                            {"min_gpus", 1}, {"max_gpus", 4}, {"version", 0.1}};
  }
  if (v.offloadOptimizer) config["zero_optimization"]["offload_optimizer"] = {{"device", "cpu"}};
  if (v.offloadParam) config["zero_optimization"]["offload_param"] = {{"device", "cpu"}};
  // A window of 1 doubles the scale after every step, so the scaler's state at the save is not the initial
  // one; starting at 2^6 it stays far below the overflow edge (~2^15 here), where a rank's fp16 partial
  // sums would decide whether a step overflows differently on another world size.
  if (v.fp16) config["fp16"] = {{"enabled", true}, {"initial_scale_power", 6}, {"loss_scale_window", 1}};
  return config;
}

struct Segment {
  std::vector<double> losses;  ///< of the steps this run trained (after any load)
  std::vector<double> lrs;     ///< get_lr() after each step
  std::vector<double> scales;  ///< cur_scale() after each step
  std::vector<int64_t> skipped;  ///< skipped_steps() after each step
  std::vector<at::Tensor> masters;  ///< strategy().fullParams() at the end (fp32)
  int64_t globalSteps = 0;
  std::string loadedPath;
};

// Trains on `world` thread ranks until global step kSteps; loads LOAD_DIR first if given; with SAVE_DIR,
// saves after step kSaveAfter and stops there (the interrupted run). Returns rank 0's view.
Segment train(const Variant& v, int world, const std::optional<std::string>& loadDir,
              const std::optional<std::string>& saveDir) {
  const auto init = zero::testing::initialParams();
  const auto data = zero::testing::makeData(kTrainBatch * kSteps);
  const nlohmann::json config = configFor(v);
  std::vector<Segment> out(static_cast<size_t>(world));
  zero::testing::runRanks(world, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    InitOptions opts;
    opts.dist = distFor(rank, world, pg);
    opts.modelAvoidsHalfKernels = true;  // fp16 layers compute in fp32 on the CPU
    zero::testing::NestedMlp model(init);
    auto engine = initialize(model, config, opts);
    const auto dtype = model->last->weight.scalar_type();
    Segment& seg = out[static_cast<size_t>(rank)];
    if (loadDir) seg.loadedPath = engine->load_checkpoint(*loadDir).path;
    const int64_t gas = engine->gradient_accumulation_steps();
    const int64_t micro = engine->train_micro_batch_size_per_gpu();
    // Checked with TORCH_CHECK: Catch2 assertions are not thread-safe, runThreadWorld rethrows.
    TORCH_CHECK(engine->train_batch_size() == kTrainBatch && micro * gas * world == kTrainBatch, "batch ",
                engine->train_batch_size(), " = ", micro, " x ", gas, " x ", world, ", expected ", kTrainBatch);
    for (int64_t step = engine->global_steps(); step < kSteps; ++step) {
      double sum = 0;
      for (int64_t m = 0; m < gas; ++m) {
        // Global step t consumes samples [t * kTrainBatch, (t + 1) * kTrainBatch) at every world size.
        const int64_t first = step * kTrainBatch + (m * world + rank) * micro;
        at::Tensor y = engine->forward(data.x.narrow(0, first, micro).to(dtype)).to(at::kFloat);
        at::Tensor loss = at::mse_loss(y, data.y.narrow(0, first, micro));
        engine->backward(loss);
        engine->step();
        sum += loss.item<double>();
      }
      std::vector<at::Tensor> t{at::full({1}, sum, at::kDouble)};
      pg->allreduce(t)->wait();
      seg.losses.push_back(t[0].item<double>() / static_cast<double>(world * gas));
      seg.lrs.push_back(engine->get_lr());
      seg.scales.push_back(engine->cur_scale());
      seg.skipped.push_back(engine->skipped_steps());
      if (saveDir && engine->global_steps() == kSaveAfter) {
        engine->save_checkpoint(*saveDir);
        break;
      }
    }
    seg.masters = engine->strategy().fullParams();  // collective at stage 3
    seg.globalSteps = engine->global_steps();
  });
  return out[0];
}

double relDiff(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-12); }

}  // namespace

TEST_CASE("a checkpoint saved on N ranks resumes on M ranks like an uninterrupted run, at every stage, with "
          "offload and in fp16",
          "[engine][checkpoint][elastic]") {
  const Variant variant = GENERATE(values<Variant>({
      {"stage 0", 0},
      {"stage 1", 1},
      {"stage 2", 2},
      {"stage 3", 3},
      {"stage 1 offload_optimizer", 1, true},
      {"stage 2 offload_optimizer", 2, true},
      // libdsrt offloads the parameter partition together with the optimizer state: offload_param alone is
      // refused ("add offload_optimizer"), so offload_param is tested with both.
      {"stage 3 offload_optimizer", 3, true},
      {"stage 3 offload_optimizer and offload_param", 3, true, true},
      {"stage 0 fp16", 0, false, false, true},
      {"stage 1 fp16", 1, false, false, true},
      {"stage 2 fp16 offload_optimizer", 2, true, false, true},
      {"stage 3 fp16", 3, false, false, true},
      // The batch from an elasticity block: micro batch 4 or 2 as the world size needs, global batch 24.
      {"stage 2 elasticity", 2, false, false, false, true},
      {"stage 3 elasticity offload_optimizer", 3, true, false, false, true},
  }));
  auto [saveWorld, loadWorld] = GENERATE(table<int, int>({{4, 3}, {3, 2}, {2, 4}}));
  INFO(variant.name << ", saved on " << saveWorld << " ranks, resumed on " << loadWorld);
  const TempDir tmp;
  const std::string dir = tmp.path() + "/ckpt";
  const Segment whole = train(variant, saveWorld, std::nullopt, std::nullopt);
  const Segment first = train(variant, saveWorld, std::nullopt, dir);
  REQUIRE(first.globalSteps == kSaveAfter);
  const Segment rest = train(variant, loadWorld, dir, std::nullopt);

  CHECK(rest.loadedPath == dir + "/global_step3");
  CHECK(rest.globalSteps == kSteps);
  REQUIRE(rest.losses.size() == size_t(kSteps - kSaveAfter));
  // fp32 sums in another order on M ranks (1e-5); fp16 rounds each rank's micro-batch gradients (1e-3).
  const double tol = variant.fp16 ? 1e-3 : 1e-5;
  for (size_t i = 0; i < rest.losses.size(); ++i) {
    const size_t s = kSaveAfter + i;
    INFO("step " << s + 1 << ": resumed " << rest.losses[i] << ", uninterrupted " << whole.losses[s]);
    CHECK(relDiff(rest.losses[i], whole.losses[s]) <= tol);
    CHECK(rest.lrs[i] == Approx(whole.lrs[s]).epsilon(1e-12));
    // The loss scaler continues where it was saved: same scale and skipped-step count at every step.
    CHECK(rest.scales[i] == whole.scales[s]);
    CHECK(rest.skipped[i] == whole.skipped[s]);
  }
  if (variant.fp16) {
    // Not trivially true: the scale moved before the save (a fresh scaler would restart at 2^6).
    CHECK(first.scales.back() >= double(1 << 8));
  }
  REQUIRE(rest.masters.size() == whole.masters.size());
  for (size_t i = 0; i < whole.masters.size(); ++i) {
    const double scale = std::max(whole.masters[i].abs().max().item<double>(), 1e-12);
    const double diff = (rest.masters[i] - whole.masters[i]).abs().max().item<double>() / scale;
    INFO("parameter " << i << " max relative difference " << diff);
    CHECK(diff <= tol);
  }
}

}  // namespace dsrt::testing

namespace dsrt::testing {

TEST_CASE("with DSRUN_PROGRESS_FILE set the engine writes its global step after every optimizer step and after a "
          "load",
          "[engine][progress]") {
  const TempDir tmp;
  const std::string file = tmp.path() + "/rank0.progress";
  const std::string dir = tmp.path() + "/ckpt";
  ::setenv("DSRUN_PROGRESS_FILE", file.c_str(), 1);
  auto readRecord = [&] {
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return text;
  };
  std::vector<std::string> records;
  runThreadWorld(1, [&](int, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    InitOptions opts;
    opts.dist = distFor(0, 1, pg);
    // gradient accumulation 2: the counter moves at the boundary micro-step only
    auto engine = initialize(std::make_shared<TinyMlp>(12, 24, 3), tinyConfig(1, 8, 4), opts);
    for (int64_t step = 0; step < 3; ++step) {
      trainOneStep(*engine, 3, step, 12);
      records.push_back(readRecord());
    }
    engine->save_checkpoint(dir);
    auto resumed = initialize(std::make_shared<TinyMlp>(12, 24, 3), tinyConfig(1, 8, 4), opts);
    resumed->load_checkpoint(dir);
  });
  const std::string afterLoad = readRecord();
  ::unsetenv("DSRUN_PROGRESS_FILE");
  CHECK(records == std::vector<std::string>{formatProgressRecord(1), formatProgressRecord(2), formatProgressRecord(3)});
  CHECK(afterLoad == formatProgressRecord(3));
}

}  // namespace dsrt::testing
