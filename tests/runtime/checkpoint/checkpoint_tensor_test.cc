// The LibTorch side of checkpoints: tensor re-partitioning N -> M, state files, consolidation and the
// ds_to_fp32 command. Few TEST_CASEs on purpose: each is a process, and LibTorch costs ~0.75 s to start.
#include <ATen/ATen.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sys/wait.h>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/checkpoint/checkpoint_commit.h"
#include "runtime/checkpoint/checkpoint_error.h"
#include "runtime/checkpoint/checkpoint_layout.h"
#include "runtime/checkpoint/checkpoint_states.h"
#include "runtime/checkpoint/consolidate.h"
#include "runtime/checkpoint/repartition.h"
#include "runtime/checkpoint/torch_state_dict.h"
#include "tests/common/temp_dir.h"

// After the torch headers: Catch's CHECK must replace glog's (as tests/runtime/zero do).
#include <catch2/catch.hpp>

using namespace dsrt::checkpoint;
using dsrt::zero::PartitionPlan;
using dsrt::zero::planPartition;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

// Cuts a padded copy of `flat` (numel elements) into the plan's partitions.
std::vector<at::Tensor> cut(const at::Tensor& flat, const PartitionPlan& plan) {
  at::Tensor padded = at::zeros({plan.paddedNumel}, flat.options());
  padded.narrow(0, 0, plan.numel).copy_(flat);
  std::vector<at::Tensor> parts;
  for (int r = 0; r < plan.worldSize; ++r) parts.push_back(padded.narrow(0, plan.partitionBegin(r), plan.partitionNumel).clone());
  return parts;
}

const std::vector<int64_t> kNumels = {6, 1, 11, 4};  // shapes {2,3}, {1}, {11}, {2,2}
const std::vector<std::vector<int64_t>> kShapes = {{2, 3}, {1}, {11}, {2, 2}};
const std::vector<std::string> kNames = {"fc1.weight", "fc1.bias", "fc2.weight", "head.weight"};

// Writes a complete stage-2 checkpoint as `n` ranks would, through the commit protocol.
void saveSyntheticZero2(const std::string& dir, const std::string& tag, const at::Tensor& flat, int n) {
  const PartitionPlan plan = planPartition(kNumels, n, 2);
  const std::string staging = beginStaging(dir, tag);
  ModelStates model;
  model.zeroStage = 2;
  model.worldSize = n;
  model.paramNames = kNames;
  for (size_t i = 0; i < kNumels.size(); ++i) model.params.push_back(flat.narrow(0, plan.paramOffsets[i], kNumels[i]).view(kShapes[i]));
  model.plan = plan;
  model.engineState = {{"global_steps", 6}};
  model.clientState = {{"epoch", 1}};
  writeModelStates(staging + "/" + modelStatesFileName(0, 2), model);
  const auto parts = cut(flat, plan);
  const auto moments = cut(flat * 10, plan);
  for (int r = 0; r < n; ++r) {
    OptimPartition p;
    p.rank = r;
    p.zeroStage = 2;
    p.plan = plan;
    p.fp32Partition = parts[r];
    p.state = {{"exp_avg", moments[r]}, {"exp_avg_sq", moments[r] * moments[r]}};
    p.step = 6;
    writeOptimPartition(staging + "/" + optimStatesFileName(r, 2), p);
  }
  commitStaging(dir, tag);
}

}  // namespace

TEST_CASE("repartition moves flat state from N to M ranks exactly, for every N and M in 1..4", "[checkpoint]") {
  const at::Tensor flat = at::arange(1, 23, at::kFloat);  // 22 = sum(kNumels)
  for (int n = 1; n <= 4; ++n) {
    const PartitionPlan saved = planPartition(kNumels, n, 2);
    const auto savedParts = cut(flat, saved);
    for (int m = 1; m <= 4; ++m) {
      const PartitionPlan target = planPartition(kNumels, m, 2);
      const auto expected = cut(flat, target);
      for (int r = 0; r < m; ++r) {
        INFO("N=" << n << " M=" << m << " rank " << r);
        CHECK(at::equal(repartition(savedParts, saved, target, r), expected[r]));
        // Only the source partitions it names are read: the others may be absent.
        std::vector<at::Tensor> sparse(n);
        for (int s : sourceRanks(saved, target, r)) sparse[s] = savedParts[s];
        CHECK(at::equal(repartition(sparse, saved, target, r), expected[r]));
      }
    }
    CHECK(at::equal(consolidateFlat(savedParts, saved), flat));
  }
  const PartitionPlan two = planPartition(kNumels, 2, 2);
  REQUIRE_THROWS_WITH(repartition({at::zeros({12})}, two, two, 0), Contains("one partition per saved rank (2), got '1'"));
  REQUIRE_THROWS_WITH(repartition({at::zeros({5}), at::zeros({12})}, two, two, 0),
                      Contains("saved partition 0 must be 1-D with 12 elements, got '5'"));
}

TEST_CASE("state files round-trip and a wrong or missing file is named in the error", "[checkpoint]") {
  TempDir tmp;
  const at::Tensor flat = at::randn({22});
  saveSyntheticZero2(tmp.path(), "global_step6", flat, 3);
  const std::string tdir = tmp.path() + "/global_step6";

  const ModelStates model = readModelStates(tdir + "/mp_rank_00_model_states.pt");
  CHECK(model.zeroStage == 2);
  CHECK(model.worldSize == 3);
  CHECK(model.paramNames == kNames);
  CHECK(model.params[0].sizes().vec() == kShapes[0]);
  CHECK(model.engineState["global_steps"] == 6);
  CHECK(model.clientState["epoch"] == 1);
  REQUIRE(model.plan.has_value());
  CHECK(model.plan->worldSize == 3);

  const OptimPartition p1 = readOptimPartition(tdir + "/zero_pp_rank_1_mp_rank_00_optim_states.pt", 1);
  CHECK(p1.step == 6);
  REQUIRE(p1.state.size() == 2);
  CHECK(p1.state[0].first == "exp_avg");
  CHECK(at::equal(p1.fp32Partition, cut(flat, p1.plan)[1]));
  REQUIRE_THROWS_WITH(readOptimPartition(tdir + "/zero_pp_rank_1_mp_rank_00_optim_states.pt", 2),
                      Contains("zero_pp_rank_1_mp_rank_00_optim_states.pt: partition of rank 2 expected, got '1'"));
  REQUIRE_THROWS_WITH(readModelStates(tdir + "/zero_pp_rank_0_mp_rank_00_optim_states.pt"),
                      Contains("expected a dsrt_model_states file, got 'dsrt_optim_states'"));

  // Stage 0 keeps the optimizer in the module file.
  ModelStates s0;
  s0.paramNames = {"w"};
  s0.params = {at::ones({2, 2})};
  s0.optimizerState = {{"exp_avg", at::full({4}, 3.0f)}};
  s0.optimizerStep = 4;
  writeModelStates(tmp.path() + "/s0.pt", s0);
  const ModelStates back = readModelStates(tmp.path() + "/s0.pt");
  CHECK(back.optimizerStep == 4);
  REQUIRE(back.optimizerState.size() == 1);
  CHECK(at::equal(back.optimizerState[0].second, at::full({4}, 3.0f)));

  // A partition file lost after the commit: consolidation names it.
  fs::remove(tdir + "/zero_pp_rank_2_mp_rank_00_optim_states.pt");
  REQUIRE_THROWS_WITH(consolidateFp32(tmp.path()),
                      Contains(tdir + "/zero_pp_rank_2_mp_rank_00_optim_states.pt: open: No such file or directory"));
  REQUIRE_THROWS_WITH(consolidateFp32(tmp.path(), std::string("global_step9")), Contains(tmp.path() + "/global_step9: no such checkpoint"));
  REQUIRE_THROWS_WITH(consolidateFp32(tmp.path() + "/empty"), Contains(tmp.path() + "/empty/latest: no such file"));
}

TEST_CASE("consolidateFp32 and ds_to_fp32 rebuild the full fp32 parameters from any number of ranks", "[checkpoint]") {
  TempDir tmp;
  const at::Tensor flat = at::randn({22});
  for (int n = 1; n <= 4; ++n) {
    const std::string dir = tmp.path() + "/ck" + std::to_string(n);
    saveSyntheticZero2(dir, "global_step6", flat, n);
    const NamedTensors full = consolidateFp32(dir);
    REQUIRE(full.size() == kNames.size());
    int64_t offset = 0;
    for (size_t i = 0; i < full.size(); ++i) {
      INFO("N=" << n << " " << kNames[i]);
      CHECK(full[i].first == kNames[i]);
      CHECK(full[i].second.sizes().vec() == kShapes[i]);
      CHECK(at::equal(full[i].second.flatten(), flat.narrow(0, offset, kNumels[i])));
      offset += kNumels[i];
    }
  }
  // A save that died after writing some files leaves `latest` and its checkpoint intact.
  const std::string dir = tmp.path() + "/ck2";
  const std::string staging = beginStaging(dir, "global_step12");
  ModelStates partial;
  partial.paramNames = {"x"};
  partial.params = {at::zeros({1})};
  writeModelStates(staging + "/mp_rank_00_model_states.pt", partial);
  CHECK(consolidateFp32(dir).size() == kNames.size());
  REQUIRE_THROWS_WITH(consolidateFp32(dir, std::string("global_step12")),
                      Contains("global_step12: no such checkpoint (" + staging + " exists: that save never finished)"));

  // The command: writes a torch state_dict equal to the consolidation; a bad directory exits 1 naming it.
  const std::string out = tmp.path() + "/full_fp32.pt";
  const std::string cmd = std::string(DS_TO_FP32_PATH) + " " + dir + " " + out + " > " + tmp.path() + "/log 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const NamedTensors written = readTorchStateDict(out);
  const NamedTensors expected = consolidateFp32(dir);
  REQUIRE(written.size() == expected.size());
  for (size_t i = 0; i < written.size(); ++i) {
    CHECK(written[i].first == expected[i].first);
    CHECK(at::equal(written[i].second, expected[i].second));
  }
  const std::string bad = std::string(DS_TO_FP32_PATH) + " " + tmp.path() + "/nothing " + out + " > /dev/null 2>&1";
  const int status = std::system(bad.c_str());
  CHECK(WEXITSTATUS(status) == 1);
}
