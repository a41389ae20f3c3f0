#pragma once
// DeepSpeed's ds_config schema as plain values. parseConfig() validates a parsed JSON document and resolves
// every default and derived value the way deepspeed/runtime/config.py does, so the engine reads fields and
// never looks at JSON. Torch-free: dtypes are enums, and errors are dsrt::config::ConfigError.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/config/config_error.h"

namespace dsrt::config {

/// The three batch keys after DeepSpeed's arithmetic (_set_batch_related_parameters + _batch_assertion):
/// trainBatchSize == microBatchPerGpu * gradientAccumulationSteps * worldSize, all > 0.
struct BatchConfig {
  int64_t trainBatchSize = 0;             ///< train_batch_size: samples per optimizer step, all ranks
  int64_t microBatchPerGpu = 0;           ///< train_micro_batch_size_per_gpu: samples per forward per rank
  int64_t gradientAccumulationSteps = 0;  ///< gradient_accumulation_steps: micro-batches per optimizer step
};

enum class OptimizerType { Adam, AdamW, SGD, Lion, Adagrad };

/// `optimizer` block; type names are case-insensitive ("adam", "AdamW", "sgd", "lion", "adagrad").
struct OptimizerConfig {
  OptimizerType type = OptimizerType::AdamW;  ///< as written (Adam, AdamW, SGD, Lion or Adagrad)
  double lr = 1e-3;                           ///< params.lr (Adagrad's default is 1e-2, as torch's)
  std::array<double, 2> betas{0.9, 0.999};    ///< params.betas (Adam family, Lion)
  double eps = 1e-8;                          ///< params.eps (Adam family; Adagrad's default is 1e-10)
  double weightDecay = 0.0;                   ///< params.weight_decay (0.01 for torch_adam AdamW, as torch)
  /// Decoupled (AdamW) weight decay. DeepSpeed's effective_adam_w_mode: true for AdamW, and ALSO for
  /// "Adam" unless params.adam_w_mode is false. This, not `type`, selects the update rule.
  bool adamWMode = true;
  bool biasCorrection = true;  ///< params.bias_correction (Adam family)
  bool torchAdam = false;      ///< params.torch_adam: DeepSpeed would use torch.optim.Adam/AdamW
  double momentum = 0.0;       ///< params.momentum (SGD)
  double dampening = 0.0;      ///< params.dampening (SGD)
  bool nesterov = false;       ///< params.nesterov (SGD; requires momentum > 0 and dampening == 0)
  double lrDecay = 0.0;                  ///< params.lr_decay (Adagrad; torch.optim.Adagrad only)
  double initialAccumulatorValue = 0.0;  ///< params.initial_accumulator_value (Adagrad; torch only)
};

enum class SchedulerType { WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle, LRRangeTest };
enum class WarmupType { Log, Linear };

/// `scheduler` block with every parameter defaulted as deepspeed/runtime/lr_schedules.py does; only the
/// fields of `type` are meaningful. The formulas live in runtime/config/lr_schedule.h.
struct SchedulerConfig {
  SchedulerType type = SchedulerType::WarmupLR;
  // WarmupLR, WarmupDecayLR, WarmupCosineLR
  double warmupMinLr = 0.0;                   ///< warmup_min_lr
  double warmupMaxLr = 0.001;                 ///< warmup_max_lr
  int64_t warmupNumSteps = 1000;              ///< warmup_num_steps as written (formulas use max(2, it))
  WarmupType warmupType = WarmupType::Log;    ///< warmup_type: "log" | "linear"
  int64_t totalNumSteps = 0;                  ///< total_num_steps (required for Decay and Cosine)
  double warmupMinRatio = 0.0;                ///< warmup_min_ratio (WarmupCosineLR)
  double cosMinRatio = 0.0001;                ///< cos_min_ratio (WarmupCosineLR)
  double baseLr = 1e-3;                       ///< optimizer lr that WarmupCosineLR scales (org_lrs)
  // OneCycle
  double cycleMinLr = 0.0;                    ///< cycle_min_lr (required)
  double cycleMaxLr = 0.0;                    ///< cycle_max_lr (required)
  double decayLrRate = 0.0;                   ///< decay_lr_rate
  int64_t cycleFirstStepSize = 2000;          ///< cycle_first_step_size
  int64_t cycleSecondStepSize = 2000;         ///< cycle_second_step_size (defaults to the first)
  int64_t cycleFirstStairCount = 0;           ///< parsed; DeepSpeed's formulas never use it
  int64_t cycleSecondStairCount = 0;          ///< parsed; DeepSpeed's formulas never use it
  int64_t decayStepSize = 0;                  ///< decay_step_size (0 = no post-cycle decay)
  bool cycleMomentum = true;                  ///< cycle_momentum (only with an optimizer that has betas)
  double cycleMinMom = 0.8;                   ///< cycle_min_mom
  double cycleMaxMom = 0.9;                   ///< cycle_max_mom
  double decayMomRate = 0.0;                  ///< decay_mom_rate
  // LRRangeTest
  double lrRangeTestMinLr = 1e-3;             ///< lr_range_test_min_lr
  int64_t lrRangeTestStepSize = 2000;         ///< lr_range_test_step_size
  double lrRangeTestStepRate = 1.0;           ///< lr_range_test_step_rate
  bool lrRangeTestStaircase = false;          ///< lr_range_test_staircase
};

enum class OffloadDevice { None, Cpu };

/// zero_optimization.offload_optimizer / offload_param (DeepSpeedZeroOffload*Config). "nvme" is refused.
struct OffloadConfig {
  OffloadDevice device = OffloadDevice::None;  ///< device: "none" | "cpu"
  bool pinMemory = false;                      ///< pin_memory
  double ratio = 1.0;                          ///< offload_optimizer.ratio in [0, 1]; < 1 needs stage 3
  bool enabled() const { return device != OffloadDevice::None; }
};

/// `zero_optimization` (DeepSpeedZeroConfig). Sizes are ELEMENT counts, as in DeepSpeed.
struct ZeroConfig {
  int stage = 0;                                  ///< 0 (DDP), 1, 2 or 3
  bool contiguousGradients = true;                ///< contiguous_gradients
  bool reduceScatter = true;                      ///< reduce_scatter
  int64_t reduceBucketSize = 500000000;           ///< reduce_bucket_size (elements)
  int64_t allgatherBucketSize = 500000000;        ///< allgather_bucket_size (elements)
  bool allgatherPartitions = true;                ///< allgather_partitions
  /// overlap_comm; DeepSpeed's default is (stage == 3). overlapCommExplicit says whether the user set it.
  bool overlapComm = false;
  bool overlapCommExplicit = false;
  bool roundRobinGradients = false;               ///< round_robin_gradients
  bool ignoreUnusedParameters = true;             ///< ignore_unused_parameters
  bool loadFromFp32Weights = true;                ///< load_from_fp32_weights
  int64_t subGroupSize = 1000000000;              ///< sub_group_size
  OffloadConfig offloadOptimizer;                 ///< offload_optimizer (or deprecated cpu_offload)
  OffloadConfig offloadParam;                     ///< offload_param (or deprecated cpu_offload_param)
  int64_t prefetchBucketSize = 50000000;          ///< stage3_prefetch_bucket_size
  int64_t paramPersistenceThreshold = 100000;     ///< stage3_param_persistence_threshold
  int64_t modelPersistenceThreshold = INT64_MAX;  ///< stage3_model_persistence_threshold
  int64_t maxLiveParameters = 1000000000;         ///< stage3_max_live_parameters
  int64_t maxReuseDistance = 1000000000;          ///< stage3_max_reuse_distance
  bool gather16bitWeightsOnModelSave = false;     ///< stage3_gather_16bit_weights_on_model_save
};

/// `fp16` block (DeepSpeed's dynamic loss scaler settings).
struct Fp16Config {
  bool enabled = false;
  bool autoCast = false;               ///< auto_cast
  double lossScale = 0.0;              ///< loss_scale: 0 = dynamic, otherwise a fixed scale
  int initialScalePower = 16;          ///< initial_scale_power: dynamic scale starts at 2^this
  int lossScaleWindow = 1000;          ///< loss_scale_window: overflow-free steps before doubling
  int hysteresis = 2;                  ///< hysteresis (DeepSpeed's delayed_shift)
  bool consecutiveHysteresis = false;  ///< consecutive_hysteresis
  double minLossScale = 1.0;           ///< min_loss_scale
  bool masterWeightsAndGrads = false;  ///< fp16_master_weights_and_grads (ZeRO stage 2 only)
  /// True when any of initial_scale_power, loss_scale_window, hysteresis, consecutive_hysteresis or
  /// min_loss_scale was written. DeepSpeed then passes all five to the scaler; when none was written its
  /// ZeRO optimizers fall back to DynamicLossScaler()'s own defaults (2^32 initial scale, hysteresis 1).
  bool dynamicLossArgsExplicit = false;
  bool dynamic() const { return lossScale == 0.0; }
};

/// `bf16` block (or its old name `bfloat16`).
struct Bf16Config {
  bool enabled = false;
  bool immediateGradUpdate = false;  ///< immediate_grad_update
};

enum class DataType { Fp32, Fp16, Bf16 };

/// A whole ds_config after validation. Produced only by parseConfig()/loadConfigFile().
struct DeepSpeedConfig {
  BatchConfig batch;
  std::optional<OptimizerConfig> optimizer;      ///< absent: the client passes its own optimizer
  std::optional<SchedulerConfig> scheduler;      ///< absent: constant lr
  ZeroConfig zero;
  Fp16Config fp16;
  Bf16Config bf16;
  std::optional<DataType> communicationDataType;  ///< communication_data_type; absent = the params' dtype
  double gradientClipping = 0.0;                  ///< gradient_clipping: global-norm cap, 0 = off
  std::optional<int64_t> stepsPerPrint;           ///< steps_per_print; absent = never print
  bool wallClockBreakdown = false;                ///< wall_clock_breakdown
  bool prescaleGradients = false;                 ///< prescale_gradients
  double gradientPredivideFactor = 1.0;           ///< gradient_predivide_factor
  int worldSize = 1;                              ///< the data-parallel world size the batch was resolved for
  std::string source;                             ///< where the config came from (for messages)
  std::vector<std::string> warnings;              ///< every warning this parse produced (also sent to stderr)
  /// Enabled blocks only the Python package implements (tensorboard, csv_monitor, ...: top_level_keys.h).
  std::vector<std::string> pythonPackageBlocks;
  /// With an enabled "elasticity" block: the world sizes the job may restart on (DeepSpeed's valid_gpus),
  /// and `batch` is the elastic batch for `worldSize`. Empty without elasticity.
  std::vector<int64_t> elasticValidWorldSizes;
};

/// DEEPSPEED_ELASTICITY_CONFIG from the process environment: the elasticity block the resource scheduler
/// planned with (unset: nullopt). Defined in elasticity.cc.
std::optional<std::string> schedulerElasticityConfig();

/// Validates `doc` (a ds_config object) for `worldSize` data-parallel ranks. `source` names the input in
/// messages (a file path, or e.g. "<dict>"). Throws ConfigError naming the key path and allowed values.
/// Unknown or unsupported keys are warnings: each distinct message goes to stderr once per process.
/// An enabled "elasticity" block sets the batch for `worldSize` as DeepSpeed's compute_elastic_config
/// does (runtime/config/elasticity.h); `schedulerElasticity` is DEEPSPEED_ELASTICITY_CONFIG (read from
/// the environment unless given), which must agree with the block.
DeepSpeedConfig parseConfig(const nlohmann::json& doc, int worldSize, const std::string& source,
                            const std::optional<std::string>& schedulerElasticity = schedulerElasticityConfig());

/// Parses JSON text (comments allowed, duplicate keys refused as DeepSpeed does), then parseConfig().
DeepSpeedConfig parseConfigText(const std::string& text, int worldSize, const std::string& source);

/// Reads a file: *.yaml / *.yml through yaml-cpp (ConfigError if built without it), anything else as JSON.
DeepSpeedConfig loadConfigFile(const std::string& path, int worldSize);

/// Reads a YAML or JSON file into a JSON document without validating it (for tools and tests).
nlohmann::json readConfigDocument(const std::string& path);

/// Lower-case names for messages and logs: "adamw", "WarmupLR", "cpu", "bf16".
std::string toString(OptimizerType type);
std::string toString(SchedulerType type);
std::string toString(OffloadDevice device);
std::string toString(DataType type);

}  // namespace dsrt::config
