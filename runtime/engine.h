#pragma once
// The training engine: DeepSpeed's DeepSpeedEngine in C++. Built by dsrt::initialize() (runtime/runtime.h)
// from a model's parameters and a ds_config. The engine counts micro-steps, scales the loss by
// 1/gradient_accumulation_steps, applies the LR schedule and gradient clipping, and hands gradient
// reduction plus the optimizer update to a GradStrategy (stage 0 DDP, ZeRO 1 or 2).
//
// Per micro-step: loss = engine.forward(...) (or the model directly); engine.backward(loss); engine.step().
// step() updates the model only at accumulation boundaries, like DeepSpeed's engine.step().
// Single-threaded: call everything from the training thread. Errors: c10::Error.

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/checkpoint_options.h"
#include "runtime/config/deepspeed_config.h"
#include "runtime/dist_env.h"
#include "runtime/engine_timers.h"
#include "runtime/grad_strategy.h"
#include "runtime/optim/param_groups.h"
#include "runtime/precision/loss_scaler.h"
#include "runtime/precision/precision_plan.h"
#include "runtime/progress_file.h"

namespace dsrt {

class Engine {
 public:
  /// `params`: the model's trainable parameters (their storage may be re-pointed by the strategy);
  /// `dist`: the process group the config's batch arithmetic was resolved for. `paramGroups`: torch
  /// param groups, the group index of each parameter (empty: one group); their settings come from
  /// set_group_settings(). With fp16 enabled on a device where this torch has no float16 matrix multiply
  /// (Debian's CPU torch 1.13) the engine refuses the config, naming fp16.enabled and the remedy (bf16),
  /// unless `modelAvoidsHalfKernels`: the model computes its float16 layers in fp32 there (as
  /// dsrt::zero::linear does on the CPU). `clientOptimizer`, when set, builds the optimizer over the flat
  /// fp32 tensor instead of the config's optimizer block (the Python package's client torch optimizer,
  /// runtime/optim/client_flat_optimizer.h); the block then only names the engine's lr.
  Engine(std::vector<at::Tensor> params, config::DeepSpeedConfig config, std::shared_ptr<DistContext> dist,
         std::vector<int> paramGroups = {}, bool modelAvoidsHalfKernels = false,
         OptimizerFactory clientOptimizer = {});
  virtual ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Times `fn()` as the forward pass (wall_clock_breakdown) and returns its result. With fp16 on a device
  /// whose torch lacks a Half kernel the model needs after all (modelAvoidsHalfKernels), the c10::Error
  /// names the remedy (bf16).
  template <typename Fn>
  auto forward(Fn&& fn) -> decltype(fn()) {
    auto scope = timers_.scope(EngineTimers::kForward);
    try {
      return fn();
    } catch (const std::exception& e) {  // c10::Error, or a Python model's error passing through
      explainForwardError(e.what());
      throw;
    }
  }

  /// Backpropagates loss / gradient_accumulation_steps (loss itself when `scaleWrtGas` is false: the
  /// caller already divided it, as Hugging Face's Trainer does); at a boundary the strategy finishes the
  /// gradient reduction before this returns. `loss` must be a scalar that requires grad.
  void backward(const at::Tensor& loss, bool scaleWrtGas = true);

  /// Ends the micro-step. At an accumulation boundary: clip by the global norm, one optimizer update
  /// with the scheduled lr, zero the gradients, advance the scheduler and the step counters, and log
  /// every steps_per_print steps (rank 0).
  void step();

  /// DeepSpeed's is_gradient_accumulation_boundary(): the current micro-step is the last of its window
  /// (counted from micro_steps(), or as set by set_gradient_accumulation_boundary()).
  bool is_gradient_accumulation_boundary() const;
  /// DeepSpeed's set_gradient_accumulation_boundary(): from now on the caller says which micro-step ends
  /// the window (Accelerate sets it before every backward and calls step() only when it is true), so
  /// several backward() calls may precede one step().
  void set_gradient_accumulation_boundary(bool isBoundary);
  /// DeepSpeed's no_sync(): while set, backward() accumulates gradients locally without reducing them
  /// (also at a boundary), several backward() calls may follow each other, and step() is refused; the
  /// next reducing backward (a boundary one outside the context) reduces everything accumulated.
  /// ZeRO stages 2 and 3 reduce while partitioning the gradients, so they refuse it.
  void set_no_sync(bool inside);
  bool no_sync() const { return noSync_; }
  /// DeepSpeed's set_train_batch_size(): the micro-batch stays, gradient_accumulation_steps becomes
  /// trainBatchSize / (micro-batch x world size), which must divide evenly. The boundary counting, the
  /// loss scaling by 1/gas and global_samples follow from the next backward() on, as in DeepSpeed.
  void set_train_batch_size(int64_t trainBatchSize);
  /// DeepSpeed's set_train_micro_batch_size(): gradient_accumulation_steps stays, the train batch becomes
  /// micro x gas x world size.
  void set_train_micro_batch_size(int64_t microBatchSize);
  /// Where the gradients stand, for safe_get_full_grad: none since the last boundary step() or
  /// zero_grad(); accumulated locally (a window not yet reduced, or inside no_sync); reduced (the strategy
  /// holds the averaged gradient: at stages 0 and 1 after the boundary backward, at 2 and 3 after any).
  enum class GradientState { kNone, kLocal, kReduced };
  GradientState gradient_state() const { return gradState_; }
  /// What this rank holds of trainable parameter `param` (GradStrategy::fragment).
  ParamFragment param_fragment(int64_t param) const { return live().fragment(param); }
  /// The learning rate the next optimizer step will use.
  double get_lr() const;
  /// The config scheduler's position (DeepSpeed's scheduler.last_batch_iteration): -1 before any step.
  int64_t last_batch_iteration() const { return lastBatchIteration_; }
  /// Each param group's hyper-parameters for the following optimizer steps (index = group); unset
  /// fields take the config's optimizer block and the scheduled lr. The Python API sets them from
  /// optimizer.param_groups before every step, so a client LR scheduler or a script editing a group's
  /// lr moves that group's lr, as with a torch optimizer.
  void set_group_settings(std::vector<optim::GroupSettings> settings);
  /// Zeroes the gradients (done by step() at every boundary already).
  void zero_grad();

  int64_t global_steps() const { return globalSteps_; }
  int64_t global_samples() const { return globalSamples_; }
  int64_t micro_steps() const { return microSteps_; }
  int gradient_accumulation_steps() const { return static_cast<int>(config_.batch.gradientAccumulationSteps); }
  int64_t train_batch_size() const { return config_.batch.trainBatchSize; }
  int64_t train_micro_batch_size_per_gpu() const { return config_.batch.microBatchPerGpu; }
  /// Global L2 gradient norm of the last boundary (only computed when gradient_clipping > 0; else -1).
  double last_grad_norm() const { return lastGradNorm_; }
  int rank() const { return dist_->env.rank; }
  int world_size() const { return dist_->env.worldSize; }
  int zero_stage() const { return config_.zero.stage; }
  const config::DeepSpeedConfig& config() const { return config_; }
  const std::shared_ptr<DistContext>& dist() const { return dist_; }
  GradStrategy& strategy() { return live(); }
  /// Parameters + gradients + optimizer state bytes this rank holds on the model's device (ZeRO paper
  /// accounting; with offload_optimizer the fp32 master and optimizer state are not on the device).
  int64_t model_state_bytes() const { return live().modelStateBytes(); }
  /// ZeRO-Offload: bytes this rank keeps in host memory (fp32 master partition, fp32 gradient partition,
  /// optimizer state); 0 without offload_optimizer.
  int64_t offloaded_state_bytes() const { return live().offloadedStateBytes(); }

  /// Mixed precision (fp16 / bf16 blocks). The engine converts the model's floating parameters to
  /// model_dtype() at construction (DeepSpeed's module.half() / module.bfloat16()).
  c10::ScalarType model_dtype() const { return precision_.modelDtype; }
  /// DeepSpeed's engine.skipped_steps: optimizer steps skipped because fp16 gradients overflowed
  /// (global_steps() counts them too, as in DeepSpeed).
  int64_t skipped_steps() const { return skippedSteps_; }
  /// The loss scale the next backward() multiplies the loss by (1 without fp16).
  double cur_scale() const { return scaler_->scale(); }
  /// The loss scaler's schedule state, for checkpoints (precision::toJson / lossScalerStateFromJson).
  precision::LossScalerState loss_scaler_state() const { return scaler_->state(); }
  void load_loss_scaler_state(const precision::LossScalerState& state) { scaler_->loadState(state); }
  /// Accumulated wall_clock_breakdown timings (always measured; printed only when configured).
  const EngineTimers& timers() const { return timers_; }

  /// DeepSpeed's engine.save_checkpoint(save_dir, tag, client_state, save_latest): collective, every rank
  /// calls it with the same arguments. Writes SAVE_DIR/TAG (tag defaults to "global_step<N>") atomically
  /// and then, if `saveLatest`, points SAVE_DIR/latest at it. Implemented in engine_checkpoint.cc; layout
  /// in docs/checkpoints.md.
  void save_checkpoint(const std::string& saveDir, const std::optional<std::string>& tag = std::nullopt,
                       const nlohmann::json& clientState = nlohmann::json::object(), bool saveLatest = true);

  /// What load_checkpoint found: `path` is empty when LOAD_DIR has no `latest` and no tag was given
  /// (DeepSpeed returns (None, None) then and trains from scratch).
  struct LoadedCheckpoint {
    std::string path;
    nlohmann::json clientState;
    nlohmann::json engineState;  ///< the saved counters (global_steps, ...), restored or not per the options
  };
  /// DeepSpeed's engine.load_checkpoint(load_dir, tag, ...): collective. By default restores the model,
  /// the optimizer partitions (re-partitioned when saved by another number of ranks), the scheduler
  /// position, the loss scaler and the step/sample counters; `options` (runtime/checkpoint_options.h)
  /// restrict that as DeepSpeed's load_module_only / load_optimizer_states / load_lr_scheduler_states /
  /// load_module_strict do. Throws c10::Error naming the file on any mismatch.
  LoadedCheckpoint load_checkpoint(const std::string& loadDir, const std::optional<std::string>& tag = std::nullopt,
                                   const LoadCheckpointOptions& options = {});

  /// DeepSpeed's engine.save_16bit_model(save_dir, save_filename): collective. Rank 0 writes the full
  /// parameters by name in the model's dtype (fp16/bf16, or fp32 without mixed precision) to
  /// SAVE_DIR/FILE (checkpoint::readStateDictFile reads it). At ZeRO stage 3 this needs
  /// stage3_gather_16bit_weights_on_model_save; without it nothing is written and every rank returns
  /// false, as DeepSpeed does. Returns true when the file was written.
  bool save_16bit_model(const std::string& saveDir, const std::string& fileName = "pytorch_model.bin");

  /// Names of the trainable parameters (registration order), used in checkpoints; "param.<i>" if unset.
  void set_param_names(std::vector<std::string> names) { paramNames_ = std::move(names); }

  /// Lets go of the process group: frees the strategy (buckets, gathers, partitions, optimizer), each of which
  /// holds the group, and this engine's own reference, so that destroying the group joins its Gloo/NCCL threads
  /// at once. The Python package calls it at interpreter exit for every engine still alive (one kept in a module
  /// global), before destroying the group: a group freed in the interpreter's teardown aborts the rank now and
  /// then. Afterwards the counters still read, and any call that needs the strategy throws c10::Error.
  void release();

 private:
  /// Throws the fp16 refusal (half_kernels.h) when `what` is a missing-Half-kernel error under fp16;
  /// returns for any other error, which the caller rethrows unchanged.
  void explainForwardError(const std::string& what) const;
  c10::Device paramDevice() const;
  /// The strategy; throws c10::Error once release() has freed it.
  GradStrategy& live() const;
  /// zero_optimization.ignore_unused_parameters false (ZeRO 1/2 + offload_optimizer): throws AssertionFailure
  /// naming the parameters of this rank's partition that got no gradient in the window, as DeepSpeed asserts.
  void checkEveryParameterGotAGradient() const;
  void logProgress();
  /// fp16: whether any rank's gradients overflowed (allreduce MAX of the local flags).
  bool anyRankOverflowed();
  /// The multiplier for the gradients of a step that is taken: 1/loss_scale combined with clipping.
  double gradMultiplier(double scaleBefore);
  void applyScheduledMomentum();
  nlohmann::json engineState() const;              ///< engine_checkpoint.cc
  void loadEngineState(const nlohmann::json& s, const LoadCheckpointOptions& options);  ///< engine_checkpoint.cc

  config::DeepSpeedConfig config_;
  std::shared_ptr<DistContext> dist_;
  precision::PrecisionPlan precision_;
  std::unique_ptr<precision::LossScaler> scaler_;
  std::unique_ptr<GradStrategy> strategy_;
  std::vector<at::Tensor> params_;                   ///< the trainable parameters, registration order
  std::vector<std::vector<int64_t>> paramShapes_;    ///< their full shapes (ZeRO-3 releases the data)
  std::vector<std::string> paramNames_;
  EngineTimers timers_;
  int64_t microSteps_ = 0;
  int64_t globalSteps_ = 0;
  int64_t globalSamples_ = 0;
  int64_t skippedSteps_ = 0;
  int64_t lastBatchIteration_ = -1;  ///< DeepSpeed scheduler's counter (see runtime/config/lr_schedule.h)
  double lastGradNorm_ = -1.0;
  bool backwardDone_ = false;  ///< backward() ran for the current micro-step
  std::optional<bool> boundaryOverride_;  ///< set_gradient_accumulation_boundary(); empty: by micro_steps
  bool windowOpen_ = false;  ///< gradients of a window not yet ended by a boundary step() are accumulated
  bool noSync_ = false;      ///< inside DeepSpeed's no_sync(): backward() does not reduce
  bool noSyncUnreduced_ = false;  ///< a backward inside no_sync accumulated what no reducing backward has reduced yet
  GradientState gradState_ = GradientState::kNone;
  std::chrono::steady_clock::time_point lastPrint_;
  int64_t samplesAtLastPrint_ = 0;
  /// $DSRUN_PROGRESS_FILE: the global step after every optimizer step and after a load (hang detection).
  ProgressFile progress_ = ProgressFile::fromEnvironment();
};

}  // namespace dsrt
