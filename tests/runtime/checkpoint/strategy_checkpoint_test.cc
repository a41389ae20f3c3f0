// Save and load through a live ZeRO strategy on thread-rank worlds: resuming on another number of ranks
// continues with the uninterrupted run's losses, a save that dies half way leaves the previous
// checkpoint loadable, and the consolidated fp32 file equals the live model.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/checkpoint/checkpoint_commit.h"
#include "runtime/checkpoint/checkpoint_error.h"
#include "runtime/checkpoint/consolidate.h"
#include "runtime/checkpoint/strategy_checkpoint.h"
#include "runtime/optim/flat_optimizer.h"
#include "runtime/zero/zero_strategy.h"
#include "tests/common/temp_dir.h"
#include "tests/runtime/core/thread_world.h"
#include "tests/runtime/zero/zero_test_model.h"

// After the torch headers: Catch's CHECK must replace glog's (as tests/runtime/zero do).
#include <catch2/catch.hpp>

using namespace dsrt;
using namespace dsrt::checkpoint;
using Catch::Contains;

namespace {

constexpr int64_t kGlobalBatch = 24;
constexpr double kLr = 0.05;
constexpr int kSteps = 6;
constexpr int kSaveAfter = 3;

struct Trained {
  std::vector<double> losses;         ///< global loss of each step run (index 0 = first step run)
  std::vector<at::Tensor> params;     ///< final parameters (rank 0)
};

/// Trains steps [first, last) on `world` ranks at `stage` with `kind` (Adam unless said); loads `loadDir`
/// first and saves to `saveDir` after step `saveAt` when given.
Trained train(int stage, int world, int first, int last, const std::string& loadDir, const std::string& saveDir,
              int saveAt, optim::OptimizerKind kind = optim::OptimizerKind::kAdam) {
  const zero::testing::Data data = zero::testing::makeData(kGlobalBatch * kSteps);
  const auto init = zero::testing::initialParams();
  Trained out;
  std::mutex mu;
  testing::runThreadWorld(world, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    auto p = zero::testing::replicate(init);
    StrategyContext ctx;
    ctx.params = p;
    ctx.pg = pg;
    ctx.rank = rank;
    ctx.worldSize = world;
    ctx.reduceBucketNumel = 40;
    ctx.allgatherBucketNumel = 24;
    optim::OptimizerSpec ospec;
    ospec.kind = kind;
    ospec.weightDecay = 0.01;
    ospec.numThreads = 1;
    ctx.makeOptimizer = [ospec](at::Tensor flat) { return optim::makeFlatOptimizer(ospec, flat.numel()); };
    auto strategy = zero::makeZeroStrategy(stage, ctx);
    StrategyHandle h{strategy.get(), p, {}, pg, rank, world, stage, {}};
    if (!loadDir.empty()) {
      const LoadedStates loaded = loadStrategyCheckpoint(h, loadDir);
      // Catch2 assertions are not thread-safe: a mismatch throws, runThreadWorld rethrows it.
      if (loaded.engineState["global_steps"] != first || loaded.clientState["note"] != "resume me") {
        throw std::runtime_error("loaded states differ: " + loaded.engineState.dump() + " " + loaded.clientState.dump());
      }
    }
    const int64_t micro = kGlobalBatch / world;
    for (int s = first; s < last; ++s) {
      const int64_t begin = s * kGlobalBatch + rank * micro;
      strategy->beginBackward(true);
      at::Tensor loss = zero::testing::mlpLoss(p, data.x.narrow(0, begin, micro), data.y.narrow(0, begin, micro));
      loss.backward();
      strategy->endBackward(true);
      strategy->gradNorm();
      strategy->step(kLr, 1.0);
      strategy->zeroGrad();
      std::vector<at::Tensor> t{at::full({1}, loss.item<double>(), at::kDouble)};
      pg->allreduce(t)->wait();
      if (rank == 0) out.losses.push_back(t[0].item<double>() / world);
      if (!saveDir.empty() && s + 1 == saveAt) {
        saveStrategyCheckpoint(h, saveDir, "global_step" + std::to_string(saveAt), {{"global_steps", saveAt}},
                               {{"note", "resume me"}});
      }
    }
    if (rank == 0) {
      std::lock_guard<std::mutex> lock(mu);
      for (auto& t : p) out.params.push_back(t.detach().clone());
    }
  });
  return out;
}

double relDiff(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-12); }

}  // namespace

TEST_CASE("a ZeRO checkpoint saved on N ranks resumes on M ranks with the uninterrupted losses", "[checkpoint]") {
  using optim::OptimizerKind;
  // Lion's exp_avg and Adagrad's sum re-partition by name as Adam's moments do.
  auto [stage, saveWorld, loadWorld, kind] = GENERATE(table<int, int, int, OptimizerKind>(
      {{1, 4, 2, OptimizerKind::kAdam}, {1, 2, 4, OptimizerKind::kAdam}, {2, 4, 2, OptimizerKind::kAdam},
       {2, 2, 4, OptimizerKind::kAdam}, {2, 3, 1, OptimizerKind::kAdam}, {1, 1, 3, OptimizerKind::kAdam},
       {2, 2, 1, OptimizerKind::kLion}, {1, 2, 1, OptimizerKind::kAdagrad}}));
  INFO("stage " << stage << " saved on " << saveWorld << " ranks, loaded on " << loadWorld << ", "
                << optim::kindName(kind));
  TempDir tmp;
  const Trained full = train(stage, saveWorld, 0, kSteps, "", tmp.path(), kSaveAfter, kind);
  REQUIRE(readLatest(tmp.path()) == std::string("global_step3"));
  const Trained resumed = train(stage, loadWorld, kSaveAfter, kSteps, tmp.path(), "", -1, kind);
  REQUIRE(resumed.losses.size() == size_t(kSteps - kSaveAfter));
  for (int i = 0; i < kSteps - kSaveAfter; ++i) {
    INFO("step " << kSaveAfter + i + 1 << ": resumed " << resumed.losses[i] << " uninterrupted " << full.losses[kSaveAfter + i]);
    CHECK(relDiff(resumed.losses[i], full.losses[kSaveAfter + i]) < 1e-5);
  }
  for (size_t i = 0; i < full.params.size(); ++i) {
    const double scale = std::max(full.params[i].abs().max().item<double>(), 1e-12);
    CHECK((resumed.params[i] - full.params[i]).abs().max().item<double>() / scale < 1e-5);
  }
}

TEST_CASE("a save that dies half way leaves the previous checkpoint loadable and ds_to_fp32 equals the live model",
          "[checkpoint]") {
  TempDir tmp;
  const int world = 2;
  const auto init = zero::testing::initialParams();
  std::vector<at::Tensor> live;
  std::vector<std::string> errors(world);
  std::vector<std::string> loadedTags(world);
  testing::runThreadWorld(world, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    auto p = zero::testing::replicate(init);
    StrategyContext ctx;
    ctx.params = p;
    ctx.pg = pg;
    ctx.rank = rank;
    ctx.worldSize = world;
    ctx.makeOptimizer = [](at::Tensor flat) { return optim::makeFlatOptimizer(optim::OptimizerSpec{}, flat.numel()); };
    auto strategy = zero::makeZeroStrategy(2, ctx);
    std::vector<std::string> names;
    for (size_t i = 0; i < p.size(); ++i) names.push_back("layer" + std::to_string(i));
    StrategyHandle h{strategy.get(), p, names, pg, rank, world, 2, {}};
    const auto data = zero::testing::makeData(kGlobalBatch);
    strategy->beginBackward(true);
    zero::testing::mlpLoss(p, data.x.narrow(0, rank * 12, 12), data.y.narrow(0, rank * 12, 12)).backward();
    strategy->endBackward(true);
    strategy->step(kLr, 1.0);
    strategy->zeroGrad();
    saveStrategyCheckpoint(h, tmp.path(), "good", {}, {{"note", "resume me"}});
    if (rank == 0) {
      for (auto& t : p) live.push_back(t.detach().clone());
    }
    // The second save: rank 1 "crashes" after writing its partition file.
    try {
      saveStrategyCheckpoint(h, tmp.path(), "bad", {}, {}, [&](const std::string& path) {
        if (rank == 1) throw CheckpointError("injected crash after " + path);
      });
    } catch (const CheckpointError& e) {
      errors[rank] = e.what();
    }
    // Every rank still loads the previous checkpoint.
    loadedTags[rank] = loadStrategyCheckpoint(h, tmp.path()).tag;
  });
  CHECK_THAT(errors[1], Contains("injected crash after") && Contains("bad.tmp/zero_pp_rank_1_mp_rank_00_optim_states.pt"));
  CHECK_THAT(errors[0], Contains("failed on rank 1"));
  CHECK(loadedTags == std::vector<std::string>{"good", "good"});
  CHECK(readLatest(tmp.path()) == std::string("good"));
  CHECK_FALSE(pathExists(tmp.path() + "/bad"));
  const NamedTensors fp32 = consolidateFp32(tmp.path());
  REQUIRE(fp32.size() == live.size());
  for (size_t i = 0; i < live.size(); ++i) {
    CHECK(fp32[i].first == "layer" + std::to_string(i));
    CHECK(at::equal(fp32[i].second, live[i]));
  }
}
