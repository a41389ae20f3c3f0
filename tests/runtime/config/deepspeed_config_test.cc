#include "runtime/config/deepspeed_config.h"

#include <catch2/catch.hpp>

#include "runtime/config/config_warnings.h"

using namespace dsrt::config;
using nlohmann::json;

namespace {

// Swallows warnings for the test's duration so expected ones do not clutter the output.
struct QuietWarnings {
  QuietWarnings() { setWarningSinkForTesting([](const std::string&) {}); }
  ~QuietWarnings() { setWarningSinkForTesting(nullptr); }
};

DeepSpeedConfig parse(const json& doc, int worldSize = 1) { return parseConfig(doc, worldSize, "cfg.json"); }

}  // namespace

TEST_CASE("parseConfig fills every default DeepSpeed documents", "[runtime][config]") {
  DeepSpeedConfig c = parse({{"train_batch_size", 8}}, 2);
  CHECK(c.batch.trainBatchSize == 8);
  CHECK(c.batch.microBatchPerGpu == 4);
  CHECK(c.batch.gradientAccumulationSteps == 1);
  CHECK(c.worldSize == 2);
  CHECK_FALSE(c.optimizer);
  CHECK_FALSE(c.scheduler);
  CHECK(c.zero.stage == 0);
  CHECK(c.zero.reduceBucketSize == 500000000);
  CHECK(c.zero.allgatherBucketSize == 500000000);
  CHECK(c.zero.contiguousGradients);
  CHECK(c.zero.reduceScatter);
  CHECK_FALSE(c.zero.overlapComm);
  CHECK_FALSE(c.zero.overlapCommExplicit);
  CHECK_FALSE(c.zero.offloadOptimizer.enabled());
  CHECK_FALSE(c.zero.offloadParam.enabled());
  CHECK(c.zero.prefetchBucketSize == 50000000);
  CHECK(c.zero.paramPersistenceThreshold == 100000);
  CHECK(c.zero.maxLiveParameters == 1000000000);
  CHECK(c.zero.maxReuseDistance == 1000000000);
  CHECK_FALSE(c.zero.gather16bitWeightsOnModelSave);
  CHECK_FALSE(c.fp16.enabled);
  CHECK(c.fp16.dynamic());
  CHECK(c.fp16.initialScalePower == 16);
  CHECK(c.fp16.lossScaleWindow == 1000);
  CHECK(c.fp16.hysteresis == 2);
  CHECK(c.fp16.minLossScale == 1.0);
  CHECK_FALSE(c.bf16.enabled);
  CHECK_FALSE(c.communicationDataType);
  CHECK(c.gradientClipping == 0.0);
  CHECK_FALSE(c.stepsPerPrint);
  CHECK_FALSE(c.wallClockBreakdown);
  CHECK(c.warnings.empty());
}

TEST_CASE("parseConfig reads a complete ZeRO-3 offload config", "[runtime][config]") {
  json doc = json::parse(R"({
    "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
    "gradient_clipping": 1.0, "steps_per_print": 10, "wall_clock_breakdown": true,
    "communication_data_type": "BF16",
    "bf16": {"enabled": true},
    "zero_optimization": {
      "stage": 3, "overlap_comm": false, "contiguous_gradients": false, "reduce_scatter": false,
      "reduce_bucket_size": 2e8, "allgather_bucket_size": 3e8,
      "offload_optimizer": {"device": "cpu", "pin_memory": true, "ratio": 0.5},
      "offload_param": {"device": "cpu"},
      "stage3_prefetch_bucket_size": 1e7, "stage3_param_persistence_threshold": 1e4,
      "stage3_max_live_parameters": 3e7, "stage3_max_reuse_distance": 2e7,
      "stage3_gather_16bit_weights_on_model_save": true
    }
  })");
  DeepSpeedConfig c = parse(doc, 4);
  CHECK(c.batch.trainBatchSize == 32);
  CHECK(c.gradientClipping == 1.0);
  CHECK(c.stepsPerPrint == 10);
  CHECK(c.wallClockBreakdown);
  CHECK(c.communicationDataType == DataType::Bf16);
  CHECK(c.bf16.enabled);
  CHECK(c.zero.stage == 3);
  CHECK_FALSE(c.zero.overlapComm);
  CHECK(c.zero.overlapCommExplicit);
  CHECK_FALSE(c.zero.contiguousGradients);
  CHECK_FALSE(c.zero.reduceScatter);
  CHECK(c.zero.reduceBucketSize == 200000000);
  CHECK(c.zero.allgatherBucketSize == 300000000);
  CHECK(c.zero.offloadOptimizer.device == OffloadDevice::Cpu);
  CHECK(c.zero.offloadOptimizer.pinMemory);
  CHECK(c.zero.offloadOptimizer.ratio == 0.5);
  CHECK(c.zero.offloadParam.device == OffloadDevice::Cpu);
  CHECK_FALSE(c.zero.offloadParam.pinMemory);
  CHECK(c.zero.prefetchBucketSize == 10000000);
  CHECK(c.zero.paramPersistenceThreshold == 10000);
  CHECK(c.zero.maxLiveParameters == 30000000);
  CHECK(c.zero.maxReuseDistance == 20000000);
  CHECK(c.zero.gather16bitWeightsOnModelSave);
  CHECK(c.warnings.empty());
}

TEST_CASE("overlap_comm defaults to true only at stage 3, as DeepSpeed's validator sets it", "[runtime][config]") {
  auto stage = GENERATE(0, 1, 2, 3);
  DeepSpeedConfig c = parse({{"train_batch_size", 2}, {"zero_optimization", {{"stage", stage}}}});
  CHECK(c.zero.overlapComm == (stage == 3));
  CHECK_FALSE(c.zero.overlapCommExplicit);
}

TEST_CASE("null means absent everywhere and \"auto\" inside the blocks DeepSpeed's config models read",
          "[runtime][config]") {
  DeepSpeedConfig c = parse(json::parse(R"({
    "train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": null,
    "gradient_clipping": null, "steps_per_print": null,
    "optimizer": {"type": "AdamW", "params": {"lr": null}},
    "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
                          "offload_optimizer": {"device": "cpu", "pin_memory": "auto"}},
    "bf16": {"enabled": "auto"}
  })"), 2);
  CHECK(c.batch.gradientAccumulationSteps == 1);
  CHECK(c.gradientClipping == 0.0);
  CHECK_FALSE(c.stepsPerPrint);
  CHECK(c.optimizer->lr == 1e-3);
  CHECK(c.zero.reduceBucketSize == 500000000);
  CHECK(c.zero.prefetchBucketSize == 50000000);
  CHECK_FALSE(c.bf16.enabled);
  CHECK(c.warnings.empty());
}

TEST_CASE("a leftover \"auto\" outside those blocks is refused, naming the key (DeepSpeed would use the string)",
          "[runtime][config]") {
  auto [text, key] = GENERATE(table<std::string, std::string>({
      {R"({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": 4})", "train_batch_size"},
      {R"({"train_batch_size": 8, "gradient_accumulation_steps": "auto"})", "gradient_accumulation_steps"},
      {R"({"train_batch_size": 8, "gradient_clipping": "auto"})", "gradient_clipping"},
      {R"({"train_batch_size": 8, "optimizer": {"type": "AdamW", "params": {"lr": "auto"}}})", "optimizer.params.lr"},
      {R"({"train_batch_size": 8, "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
           "scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": "auto"}}})",
       "scheduler.params.warmup_max_lr"},
  }));
  CAPTURE(text);
  REQUIRE_THROWS_WITH(parse(json::parse(text), 2),
                      Catch::Matchers::Contains("cfg.json: " + key + ": \"auto\" is a placeholder") &&
                          Catch::Matchers::Contains("got 'auto'"));
}

TEST_CASE("optimizer names are case-insensitive and adam_w_mode follows DeepSpeed's effective rule",
          "[runtime][config]") {
  using Row = std::tuple<std::string, json, OptimizerType, bool, double>;
  auto [type, params, eType, eAdamW, eDecay] = GENERATE(table<std::string, json, OptimizerType, bool, double>({
      Row{"Adam", json::object(), OptimizerType::Adam, true, 0.0},  // "Adam" means AdamW unless opted out
      Row{"adam", {{"adam_w_mode", false}}, OptimizerType::Adam, false, 0.0},
      Row{"ADAMW", {{"adam_w_mode", false}}, OptimizerType::AdamW, true, 0.0},  // AdamW cannot opt out
      Row{"AdamW", {{"torch_adam", true}}, OptimizerType::AdamW, true, 0.01},  // torch.optim.AdamW default
      Row{"Adam", {{"torch_adam", true}, {"adam_w_mode", false}}, OptimizerType::Adam, false, 0.0},
      Row{"sgd", {{"momentum", 0.9}}, OptimizerType::SGD, false, 0.0},
  }));
  DeepSpeedConfig c = parse({{"train_batch_size", 1}, {"optimizer", {{"type", type}, {"params", params}}}});
  REQUIRE(c.optimizer);
  CHECK(c.optimizer->type == eType);
  CHECK(c.optimizer->adamWMode == eAdamW);
  CHECK(c.optimizer->weightDecay == eDecay);
}

TEST_CASE("optimizer params are read for Adam and SGD", "[runtime][config]") {
  DeepSpeedConfig a = parse(json::parse(R"({"train_batch_size": 1, "optimizer": {"type": "AdamW",
      "params": {"lr": 3e-4, "betas": [0.8, 0.95], "eps": 1e-6, "weight_decay": 0.1, "bias_correction": false}}})"));
  CHECK(a.optimizer->lr == 3e-4);
  CHECK(a.optimizer->betas == std::array<double, 2>{0.8, 0.95});
  CHECK(a.optimizer->eps == 1e-6);
  CHECK(a.optimizer->weightDecay == 0.1);
  CHECK_FALSE(a.optimizer->biasCorrection);
  DeepSpeedConfig s = parse(json::parse(R"({"train_batch_size": 1, "optimizer": {"type": "SGD",
      "params": {"lr": 0.1, "momentum": 0.9, "nesterov": true, "weight_decay": 1e-4}}})"));
  CHECK(s.optimizer->type == OptimizerType::SGD);
  CHECK(s.optimizer->lr == 0.1);
  CHECK(s.optimizer->momentum == 0.9);
  CHECK(s.optimizer->nesterov);
  CHECK(s.optimizer->dampening == 0.0);
  CHECK(s.optimizer->weightDecay == 1e-4);
}

TEST_CASE("Lion and Adagrad take DeepSpeed's names in any case with their classes' defaults", "[runtime][config]") {
  DeepSpeedConfig lion = parse(json::parse(R"({"train_batch_size": 1, "optimizer": {"type": "lion"}})"));
  CHECK(lion.optimizer->type == OptimizerType::Lion);
  CHECK(lion.optimizer->lr == 1e-3);  // FusedLion / DeepSpeedCPULion
  CHECK(lion.optimizer->betas == std::array<double, 2>{0.9, 0.999});
  CHECK(lion.optimizer->weightDecay == 0.0);
  CHECK_FALSE(lion.optimizer->adamWMode);
  DeepSpeedConfig lionSet = parse(json::parse(R"({"train_batch_size": 1, "optimizer": {"type": "Lion",
      "params": {"lr": 1e-4, "betas": [0.95, 0.98], "weight_decay": 0.1}}})"));
  CHECK(lionSet.optimizer->betas == std::array<double, 2>{0.95, 0.98});
  CHECK(lionSet.optimizer->weightDecay == 0.1);
  DeepSpeedConfig ada = parse(json::parse(R"({"train_batch_size": 1, "optimizer": {"type": "ADAGRAD"}})"));
  CHECK(ada.optimizer->type == OptimizerType::Adagrad);
  CHECK(ada.optimizer->lr == 1e-2);  // torch.optim.Adagrad / DeepSpeedCPUAdagrad
  CHECK(ada.optimizer->eps == 1e-10);
  CHECK(ada.optimizer->lrDecay == 0.0);
  DeepSpeedConfig adaSet = parse(json::parse(R"({"train_batch_size": 1, "optimizer": {"type": "Adagrad",
      "params": {"lr": 0.05, "eps": 1e-8, "weight_decay": 0.01, "lr_decay": 0.1, "initial_accumulator_value": 0.5}}})"));
  CHECK(adaSet.optimizer->lr == 0.05);
  CHECK(adaSet.optimizer->eps == 1e-8);
  CHECK(adaSet.optimizer->weightDecay == 0.01);
  CHECK(adaSet.optimizer->lrDecay == 0.1);
  CHECK(adaSet.optimizer->initialAccumulatorValue == 0.5);
}

TEST_CASE("scheduler params default like lr_schedules.py and WarmupCosineLR scales the optimizer lr",
          "[runtime][config]") {
  DeepSpeedConfig w = parse({{"train_batch_size", 1}, {"scheduler", {{"type", "WarmupLR"}}}});
  CHECK(w.scheduler->warmupMinLr == 0.0);
  CHECK(w.scheduler->warmupMaxLr == 0.001);
  CHECK(w.scheduler->warmupNumSteps == 1000);
  CHECK(w.scheduler->warmupType == WarmupType::Log);
  DeepSpeedConfig o = parse({{"train_batch_size", 1},
                             {"scheduler", {{"type", "OneCycle"}, {"params", {{"cycle_min_lr", 0.1},
                                                                               {"cycle_max_lr", 1.0},
                                                                               {"cycle_first_step_size", 7}}}}}});
  CHECK(o.scheduler->cycleSecondStepSize == 7);  // defaults to the first step size
  CHECK(o.scheduler->cycleMomentum);
  CHECK(o.scheduler->cycleMinMom == 0.8);
  CHECK(o.scheduler->cycleMaxMom == 0.9);
  DeepSpeedConfig r = parse({{"train_batch_size", 1}, {"scheduler", {{"type", "lrrangetest"}}}});
  CHECK(r.scheduler->type == SchedulerType::LRRangeTest);
  CHECK(r.scheduler->lrRangeTestMinLr == 1e-3);
  CHECK(r.scheduler->lrRangeTestStepSize == 2000);
  DeepSpeedConfig cos = parse({{"train_batch_size", 1},
                               {"optimizer", {{"type", "Adam"}, {"params", {{"lr", 0.02}}}}},
                               {"scheduler", {{"type", "WarmupCosineLR"}, {"params", {{"total_num_steps", 2000}}}}}});
  CHECK(cos.scheduler->baseLr == 0.02);
  CHECK(cos.scheduler->cosMinRatio == 0.0001);
}

TEST_CASE("fp16 and bf16 blocks carry the loss scaler settings", "[runtime][config]") {
  DeepSpeedConfig f = parse(json::parse(R"({"train_batch_size": 1, "fp16": {"enabled": true,
      "loss_scale": 0, "initial_scale_power": 12, "loss_scale_window": 500, "hysteresis": 3,
      "consecutive_hysteresis": true, "min_loss_scale": 0.5}})"));
  CHECK(f.fp16.enabled);
  CHECK(f.fp16.dynamic());
  CHECK(f.fp16.initialScalePower == 12);
  CHECK(f.fp16.lossScaleWindow == 500);
  CHECK(f.fp16.hysteresis == 3);
  CHECK(f.fp16.consecutiveHysteresis);
  CHECK(f.fp16.minLossScale == 0.5);
  CHECK(f.fp16.dynamicLossArgsExplicit);
  DeepSpeedConfig fixed = parse({{"train_batch_size", 1}, {"fp16", {{"enabled", true}, {"loss_scale", 128}}}});
  CHECK_FALSE(fixed.fp16.dynamic());
  CHECK(fixed.fp16.lossScale == 128);
  CHECK_FALSE(fixed.fp16.dynamicLossArgsExplicit);
  QuietWarnings quiet;
  DeepSpeedConfig old = parse({{"train_batch_size", 1}, {"bfloat16", {{"enabled", true}}}});
  CHECK(old.bf16.enabled);
  REQUIRE(old.warnings.size() == 1);
  CHECK_THAT(old.warnings[0], Catch::Matchers::Contains("bfloat16: deprecated, use bf16 instead"));
}

TEST_CASE("DeepSpeed's deprecated ZeRO spellings still work and say so", "[runtime][config]") {
  QuietWarnings quiet;
  DeepSpeedConfig b = parse({{"train_batch_size", 1}, {"zero_optimization", true}, {"allgather_size", 1e6}});
  CHECK(b.zero.stage == 1);
  CHECK(b.zero.allgatherBucketSize == 1000000);
  CHECK(b.warnings.size() == 1);
  DeepSpeedConfig off = parse({{"train_batch_size", 1}, {"zero_optimization", false}});
  CHECK(off.zero.stage == 0);
  DeepSpeedConfig c = parse(json::parse(R"({"train_batch_size": 1, "zero_optimization": {"stage": 3,
      "cpu_offload": true, "cpu_offload_param": true, "stage3_gather_fp16_weights_on_model_save": true,
      "prefetch_bucket_size": 1000}})"));
  CHECK(c.zero.offloadOptimizer.device == OffloadDevice::Cpu);
  CHECK(c.zero.offloadParam.device == OffloadDevice::Cpu);
  CHECK(c.zero.gather16bitWeightsOnModelSave);
  CHECK(c.zero.prefetchBucketSize == 1000);  // the field name works as well as the stage3_ alias
  CHECK(c.warnings.size() == 3);
}
