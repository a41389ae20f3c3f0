// Engine::save_checkpoint / load_checkpoint: the engine's counters and scheduler position on top of the
// strategy-level collective save/load (runtime/checkpoint/strategy_checkpoint.h), which owns the files,
// the atomic commit and ZeRO re-partitioning. Kept apart from engine.cc so the training loop's file does
// not depend on the checkpoint code.

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cstdio>
#include <exception>
#include <filesystem>

#include "runtime/checkpoint/checkpoint_error.h"
#include "runtime/checkpoint/checkpoint_layout.h"
#include "runtime/checkpoint/consolidate.h"
#include "runtime/checkpoint/strategy_checkpoint.h"
#include "runtime/engine.h"
#include "runtime/precision/loss_scaler_json.h"

namespace dsrt {
namespace {

checkpoint::StrategyHandle handleOf(GradStrategy& strategy, const std::vector<at::Tensor>& params,
                                    const std::vector<std::string>& names,
                                    const std::vector<std::vector<int64_t>>& shapes, const DistContext& dist,
                                    int zeroStage) {
  checkpoint::StrategyHandle h;
  h.strategy = &strategy;
  h.params = params;
  h.paramNames = names;
  h.paramShapes = shapes;
  h.pg = dist.pg;
  h.rank = dist.env.rank;
  h.worldSize = dist.env.worldSize;
  h.zeroStage = zeroStage;
  return h;
}

// ", module weights only" etc. for the load message; empty for a full load.
std::string describe(const LoadCheckpointOptions& o) {
  if (o.moduleOnly) return std::string(", module weights only") + (o.strict ? "" : ", not strict");
  std::string out;
  if (!o.optimizerStates) out += ", without optimizer states";
  if (!o.lrSchedulerStates) out += ", without lr scheduler states";
  if (!o.strict) out += ", not strict";
  return out;
}

}  // namespace

nlohmann::json Engine::engineState() const {
  return nlohmann::json{{"global_steps", globalSteps_},
                        {"global_samples", globalSamples_},
                        {"last_batch_iteration", lastBatchIteration_},
                        {"train_batch_size", config_.batch.trainBatchSize},
                        {"dp_world_size", world_size()},
                        {"zero_stage", zero_stage()},
                        {"skipped_steps", skippedSteps_},
                        {"loss_scaler", precision::toJson(scaler_->state())}};
}

// Not called with moduleOnly. The counters always come back (DeepSpeed's _load_checkpoint sets
// global_steps/global_samples/skipped_steps whenever load_module_only is False).
void Engine::loadEngineState(const nlohmann::json& s, const LoadCheckpointOptions& options) {
  globalSteps_ = s.at("global_steps").get<int64_t>();
  // DeepSpeed: global_samples defaults to global_steps * train_batch_size for old checkpoints.
  globalSamples_ = s.value("global_samples", globalSteps_ * config_.batch.trainBatchSize);
  // A save is taken after a boundary step(), so the run resumes at the start of an accumulation window
  // of THIS config (its gradient_accumulation_steps may differ from the saving run's world size).
  microSteps_ = globalSteps_ * config_.batch.gradientAccumulationSteps;
  windowOpen_ = false;
  // load_lr_scheduler_states=False: DeepSpeed leaves lr_scheduler at its own position (a new engine's: the
  // schedule's start) while the counters above are restored.
  if (options.lrSchedulerStates) lastBatchIteration_ = s.value("last_batch_iteration", globalSteps_ - 1);
  samplesAtLastPrint_ = globalSamples_;
  skippedSteps_ = s.value("skipped_steps", int64_t{0});
  // The dynamic fp16 schedule resumes where it was; a static scale (fixed loss_scale, bf16, fp32) stays
  // what this run's config says. DeepSpeed keeps the loss scaler in the optimizer's state dict, so
  // load_optimizer_states=False leaves it fresh too.
  if (options.optimizerStates && precision_.fp16 && scaler_->dynamic() && s.contains("loss_scaler")) {
    scaler_->loadState(precision::lossScalerStateFromJson(s.at("loss_scaler")));
  }
  applyScheduledMomentum();
}

void Engine::save_checkpoint(const std::string& saveDir, const std::optional<std::string>& tag,
                             const nlohmann::json& clientState, bool saveLatest) {
  TORCH_CHECK(!backwardDone_, "engine.save_checkpoint: called between backward() and step(); save after step()");
  // Gradients accumulated inside a window are not model state; a save there would silently drop them.
  TORCH_CHECK(!windowOpen_,
              "engine.save_checkpoint: called inside a gradient accumulation window (micro-step ", microSteps_,
              " of gradient_accumulation_steps ", config_.batch.gradientAccumulationSteps,
              "); save after the step() that ends the window");
  const std::string name = tag.value_or("global_step" + std::to_string(globalSteps_));
  try {
    checkpoint::saveStrategyCheckpoint(
        handleOf(live(), params_, paramNames_, paramShapes_, *dist_, zero_stage()), saveDir, name,
        engineState(), clientState.is_null() ? nlohmann::json::object() : clientState, nullptr, saveLatest);
  } catch (const checkpoint::CheckpointError& e) {
    TORCH_CHECK(false, "engine.save_checkpoint: ", e.what());
  }
  if (rank() == 0) {
    std::printf("[dsrt rank 0] saved checkpoint %s\n", checkpoint::tagDir(saveDir, name).c_str());
    std::fflush(stdout);
  }
}

Engine::LoadedCheckpoint Engine::load_checkpoint(const std::string& loadDir, const std::optional<std::string>& tag,
                                                 const LoadCheckpointOptions& options) {
  TORCH_CHECK(!backwardDone_, "engine.load_checkpoint: called between backward() and step()");
  if (!tag && !std::filesystem::exists(checkpoint::latestPath(loadDir))) {
    // DeepSpeed warns and returns (None, None): the caller trains from scratch.
    if (rank() == 0) {
      std::printf("[dsrt rank 0] no checkpoint to load: %s does not exist\n", checkpoint::latestPath(loadDir).c_str());
      std::fflush(stdout);
    }
    return {};
  }
  checkpoint::StrategyLoadOptions strategyOptions;
  strategyOptions.optimizerStates = options.optimizerStates && !options.moduleOnly;
  strategyOptions.strict = options.strict;
  strategyOptions.weightsDtype = precision_.modelDtype;
  checkpoint::LoadedStates loaded;
  try {
    loaded = checkpoint::loadStrategyCheckpoint(
        handleOf(live(), params_, paramNames_, paramShapes_, *dist_, zero_stage()), loadDir, tag,
        strategyOptions);
    if (!options.moduleOnly) loadEngineState(loaded.engineState, options);
  } catch (const checkpoint::CheckpointError& e) {
    TORCH_CHECK(false, "engine.load_checkpoint: ", e.what());
  } catch (const nlohmann::json::exception& e) {
    TORCH_CHECK(false, "engine.load_checkpoint: ", checkpoint::tagDir(loadDir, loaded.tag),
                ": engine state is incomplete: ", e.what());
  }
  live().zeroGrad();
  progress_.record(globalSteps_);
  const std::string path = checkpoint::tagDir(loadDir, loaded.tag);
  if (rank() == 0) {
    std::printf("[dsrt rank 0] loaded checkpoint %s (saved by %d ranks%s) at global step %lld\n", path.c_str(),
                loaded.savedWorldSize, describe(options).c_str(), static_cast<long long>(globalSteps_));
    std::fflush(stdout);
  }
  return {path, loaded.clientState, loaded.engineState};
}

bool Engine::save_16bit_model(const std::string& saveDir, const std::string& fileName) {
  const std::string path = saveDir + "/" + fileName;
  if (zero_stage() == 3 && !config_.zero.gather16bitWeightsOnModelSave) {
    // DeepSpeed: "the model will be bogus if not consolidated so don't confuse the user by saving it".
    if (rank() == 0) {
      std::printf("[dsrt rank 0] Did not save the model %s because `stage3_gather_16bit_weights_on_model_save` is False\n",
                  path.c_str());
      std::fflush(stdout);
    }
    return false;
  }
  std::vector<at::Tensor> full = live().fullParams();  // collective at stage 3
  std::string error;
  if (rank() == 0) {
    try {
      checkpoint::NamedTensors named;
      for (size_t i = 0; i < full.size(); ++i) {
        const std::string name = i < paramNames_.size() ? paramNames_[i] : "param." + std::to_string(i);
        named.emplace_back(name, full[i].to(params_[i].scalar_type()));
      }
      std::error_code ec;
      std::filesystem::create_directories(saveDir, ec);
      checkpoint::writeStateDictFile(path, named);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  // Every rank learns the outcome, so no rank reports success for a file rank 0 failed to write.
  at::Tensor failed = at::full({1}, error.empty() ? 0.0f : 1.0f,
                               at::TensorOptions().dtype(at::kFloat).device(collectiveDevice(*dist_->pg)));
  std::vector<at::Tensor> flag{failed};
  dist_->pg->allreduce(flag)->wait();
  TORCH_CHECK(error.empty(), "engine.save_16bit_model: ", error);
  TORCH_CHECK(flag[0].item<float>() == 0.0f, "engine.save_16bit_model: rank 0 failed to write ", path);
  return true;
}

}  // namespace dsrt
