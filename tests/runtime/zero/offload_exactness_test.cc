// ZeRO-Offload (offload_optimizer: {device: cpu}) at stages 1 and 2: the fp32 master
// partition, an fp32 gradient partition and the Adam state live in host buffers and the step runs there,
// so an fp32 run must reproduce a single process (losses and parameters within 1e-5 relative) on 1, 2
// and 4 ranks; an fp16 run must equal the same run without offload bit for bit (same arithmetic, other
// buffers); the bytes split into device and host as the ZeRO-Offload paper counts them; stage 0 is refused.
#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "runtime/zero/partition_plan.h"
#include "tests/runtime/core/exactness_harness.h"
#include "tests/runtime/core/mixed_precision_harness.h"
#include "tests/runtime/core/thread_world.h"

using namespace dsrt::testing;

namespace {

nlohmann::json offloadBlock(int stage) {
  return {{"zero_optimization",
           {{"stage", stage}, {"offload_optimizer", {{"device", "cpu"}, {"pin_memory", true}}}}}};
}

std::shared_ptr<dsrt::DistContext> singleRank() {
  std::shared_ptr<dsrt::DistContext> dist;
  runThreadWorld(1, [&](int, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) { dist = distFor(0, 1, pg); });
  return dist;
}

}  // namespace

TEST_CASE("offloaded ZeRO 1 and 2 in fp32 reproduce a single process on 1, 2 and 4 ranks, with accumulation and "
          "clipping",
          "[runtime][zero][offload]") {
  const int steps = 6;
  const int64_t trainBatch = 16;
  for (double clipping : {0.0, 0.05}) {
    const auto reference = trainTinyMlp(tinyConfig(0, trainBatch, trainBatch, clipping), singleRank(), steps);
    REQUIRE(reference.losses.back() < 0.9 * reference.losses.front());
    for (int stage : {1, 2}) {
      for (int world : {1, 2, 4}) {
        for (int gas : {1, 2}) {
          const int64_t micro = trainBatch / (world * gas);
          INFO("stage " << stage << " world " << world << " gas " << gas << " clipping " << clipping);
          const auto config = withBlocks(tinyConfig(stage, trainBatch, micro, clipping), offloadBlock(stage));
          std::vector<TrainResult> got(static_cast<size_t>(world));
          runThreadWorld(world, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
            got[static_cast<size_t>(rank)] = trainTinyMlp(config, distFor(rank, world, pg), steps);
            pg->barrier()->wait();
          });
          for (int rank = 0; rank < world; ++rank) {
            INFO("rank " << rank);
            requireSameTraining(got[static_cast<size_t>(rank)], reference);
          }
        }
      }
    }
  }
}

TEST_CASE("offloaded fp16 ZeRO 1 and 2 train bit for bit like the same run without offload",
          "[runtime][zero][offload]") {
  for (int stage : {1, 2}) {
    INFO("stage " << stage);
    const auto fp16 = nlohmann::json{{"fp16", {{"enabled", true}, {"initial_scale_power", 12}}}};
    const auto base = withBlocks(tinyConfig(stage, 16, 8), fp16);
    std::vector<MixedResult> plain(2);
    std::vector<MixedResult> offloaded(2);
    runThreadWorld(2, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
      plain[static_cast<size_t>(rank)] = trainMixed(base, distFor(rank, 2, pg), 8);
      offloaded[static_cast<size_t>(rank)] = trainMixed(withBlocks(base, offloadBlock(stage)), distFor(rank, 2, pg), 8);
      pg->barrier()->wait();
    });
    for (size_t rank = 0; rank < 2; ++rank) {
      for (size_t k = 0; k < plain[rank].steps.size(); ++k) {
        CHECK(offloaded[rank].steps[k].loss == plain[rank].steps[k].loss);
      }
      for (size_t i = 0; i < plain[rank].masters.size(); ++i) {
        CHECK(at::equal(offloaded[rank].masters[i], plain[rank].masters[i]));
        CHECK(at::equal(offloaded[rank].finalParams[i], plain[rank].finalParams[i]));
      }
    }
    CHECK(offloaded[0].steps.back().loss < 0.9 * offloaded[0].steps.front().loss);  // it trained
  }
}

TEST_CASE("offloaded and 16-bit ZeRO steps pipelined over all-gather shards equal unsharded steps bit for bit",
          "[runtime][zero][offload]") {
  // The pipelined step copies each finished piece of the fp32 master into the model (fp32 offload) or has
  // CPU Adam write it (16-bit) before that piece's exchange leaves; one shard means one whole update.
  const auto fp16 = nlohmann::json{{"fp16", {{"enabled", true}, {"initial_scale_power", 12}}}};
  const auto bf16 = nlohmann::json{{"bf16", {{"enabled", true}}}};
  for (int stage : {1, 2}) {
    for (const auto& precision : {nlohmann::json::object(), fp16, bf16}) {
      for (bool offload : {false, true}) {
        if (precision.empty() && !offload) {
          continue;  // fp32 without offload: zero_exactness_test
        }
        INFO("stage " << stage << " precision " << precision.dump() << " offload " << offload);
        auto base = withBlocks(tinyConfig(stage, 16, 8), precision);
        if (offload) {
          base = withBlocks(base, offloadBlock(stage));
        }
        // 1212 parameters on 2 ranks: partitions of 606, shards of 50 (pieces of 64-aligned fronts).
        const auto pipelined = withBlocks(base, {{"zero_optimization", {{"allgather_bucket_size", 100}}}});
        const auto whole = withBlocks(base, {{"zero_optimization", {{"allgather_bucket_size", 1 << 20}}}});
        std::vector<MixedResult> a(2);
        std::vector<MixedResult> b(2);
        runThreadWorld(2, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
          a[static_cast<size_t>(rank)] = trainMixed(pipelined, distFor(rank, 2, pg), 6);
          b[static_cast<size_t>(rank)] = trainMixed(whole, distFor(rank, 2, pg), 6);
          pg->barrier()->wait();
        });
        for (size_t rank = 0; rank < 2; ++rank) {
          for (size_t k = 0; k < a[rank].steps.size(); ++k) {
            CHECK(a[rank].steps[k].loss == b[rank].steps[k].loss);
          }
          for (size_t i = 0; i < a[rank].masters.size(); ++i) {
            CHECK(at::equal(a[rank].masters[i], b[rank].masters[i]));
            CHECK(at::equal(a[rank].finalParams[i], b[rank].finalParams[i]));
          }
        }
        CHECK(a[0].steps.back().loss < a[0].steps.front().loss);  // it trained
      }
    }
  }
}

TEST_CASE("offload keeps the params (and stage 1's gradients) on the device and 16 bytes per partitioned parameter "
          "on the host",
          "[runtime][zero][offload]") {
  for (const bool fp16 : {false, true}) {
    for (int stage : {1, 2}) {
      for (int world : {1, 2, 4}) {
        INFO((fp16 ? "fp16" : "fp32") << " stage " << stage << " world " << world);
        auto config = withBlocks(tinyConfig(stage, 16, 16 / world), offloadBlock(stage));
        if (fp16) {
          config = withBlocks(config, {{"fp16", {{"enabled", true}}}});
        }
        std::vector<MixedResult> got(static_cast<size_t>(world));
        runThreadWorld(world, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
          got[static_cast<size_t>(rank)] = trainMixed(config, distFor(rank, world, pg), 1);
          pg->barrier()->wait();
        });
        const auto plan = dsrt::zero::planPartition({got[0].numel}, world);
        const int64_t bytes = fp16 ? 2 : 4;
        const int64_t grads = stage == 1 ? plan.paddedNumel : 0;
        for (const auto& r : got) {
          // Device: the model's params, plus the full gradients at stage 1; at stage 2 the averaged
          // gradients go straight to the host partition (ds_estimate's 2 bytes/param on the GPU for fp16).
          CHECK(r.modelStateBytes == bytes * plan.paddedNumel + bytes * grads);
          // Host: fp32 master (4) + fp32 gradient (4) + Adam exp_avg and exp_avg_sq (8) per partition element.
          CHECK(r.offloadedStateBytes == 16 * plan.partitionNumel);
        }
      }
    }
  }
}

TEST_CASE("offload_optimizer at stage 0 is refused as DeepSpeed cannot run it", "[runtime][zero][offload]") {
  auto dist = singleRank();
  dsrt::InitOptions opts;
  opts.dist = dist;
  auto config = withBlocks(tinyConfig(0, 4, 4), offloadBlock(0));
  REQUIRE_THROWS_WITH(dsrt::initialize(std::make_shared<TinyMlp>(4, 8, 1), config, opts),
                      Catch::Contains("zero_optimization.offload_optimizer: ZeRO-Offload needs "
                                      "zero_optimization.stage 1, 2 or 3, got '0'"));
}
