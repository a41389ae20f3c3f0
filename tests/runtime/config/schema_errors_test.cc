#include <catch2/catch.hpp>

#include "runtime/config/config_warnings.h"
#include "runtime/config/deepspeed_config.h"

using Catch::Matchers::Contains;
using namespace dsrt::config;

TEST_CASE("every invalid value is a ConfigError naming the key path, the allowed values and the value",
          "[runtime][config]") {
  setWarningSinkForTesting([](const std::string&) {});
  // The ds_config body after {"train_batch_size": 4, ...} and the message expected (after "cfg.json: ").
  auto [body, message] = GENERATE(table<std::string, std::string>({
      {R"("zero_optimization": {"stage": 5})", "zero_optimization.stage: expected one of 0, 1, 2, 3, got '5'"},
      {R"("zero_optimization": {"stage": -1})", "zero_optimization.stage: expected one of 0, 1, 2, 3, got '-1'"},
      {R"("zero_optimization": {"stage": "2"})", "zero_optimization.stage: expected an integer, got '2'"},
      {R"("zero_optimization": 3)", "zero_optimization: expected an object, got '3'"},
      {R"("zero_optimization": {"reduce_bucket_size": 2.5})",
       "zero_optimization.reduce_bucket_size: expected an integer >= 0, got '2.5'"},
      {R"("zero_optimization": {"allgather_bucket_size": -1})",
       "zero_optimization.allgather_bucket_size: expected an integer >= 0, got '-1'"},
      {R"("zero_optimization": {"overlap_comm": "yes"})",
       "zero_optimization.overlap_comm: expected true or false, got 'yes'"},
      {R"("zero_optimization": {"offload_optimizer": {"device": "gpu"}})",
       "zero_optimization.offload_optimizer.device: expected one of none, cpu, nvme, got 'gpu'"},
      {R"("zero_optimization": {"offload_param": {"device": "nvme"}, "stage": 3})",
       "zero_optimization.offload_param.device: offload to nvme is not supported by libdsrt, expected one of"
       " none, cpu, got 'nvme'"},
      {R"("zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 1.5}})",
       "zero_optimization.offload_optimizer.ratio: expected a number in [0, 1], got '1.5'"},
      {R"("zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.5}})",
       "zero_optimization.offload_optimizer.ratio: partial offloading (ratio < 1) needs stage 3, not stage 2,"
       " got '0.5'"},
      {R"("zero_optimization": {"cpu_offload": true, "offload_optimizer": {"device": "cpu"}})",
       "zero_optimization.cpu_offload: cannot be given together with zero_optimization.offload_optimizer"},
      {R"("zero_optimization": {"stage3_max_live_parameters": 1, "max_live_parameters": 2})",
       "zero_optimization.max_live_parameters: give either zero_optimization.stage3_max_live_parameters or"
       " zero_optimization.max_live_parameters, not both"},
      {R"("optimizer": {"type": "Lamb"})",
       "optimizer.type: DeepSpeed's Lamb is not built in libdsrt (FusedLamb's trust ratio is computed per parameter"
       " tensor, which the engine's flat fp32 partitions do not keep apart), expected one of Adam, AdamW, SGD,"
       " Lion, Adagrad, got 'Lamb'"},
      {R"("optimizer": {"type": "OneBitAdam"})", "optimizer.type: DeepSpeed's OneBitAdam is not built in libdsrt ("
                                                 "its compressed communication is not built), expected one of"},
      {R"("optimizer": {"type": "MuAdamW"})",
       "optimizer.type: DeepSpeed's MuAdamW is not built in libdsrt (it needs the mup package's Python optimizer)"},
      {R"("optimizer": {"type": "RMSprop"})",
       "optimizer.type: expected one of Adam, AdamW, SGD, Lion, Adagrad, got 'RMSprop'"},
      {R"("optimizer": {"params": {"lr": 0.1}})",
       "optimizer.type: expected one of Adam, AdamW, SGD, Lion, Adagrad, got 'nothing'"},
      {R"("optimizer": {"type": "Adam", "params": {"lr": -1}})", "optimizer.params.lr: expected a number >= 0"},
      {R"("optimizer": {"type": "Adam", "params": {"betas": [0.9]}})",
       "optimizer.params.betas: expected a list of two numbers in [0, 1), got '[0.9]'"},
      {R"("optimizer": {"type": "Adam", "params": {"betas": [0.9, 1.0]}})",
       "optimizer.params.betas: expected a list of two numbers in [0, 1), got '[0.9,1.0]'"},
      {R"("optimizer": {"type": "Adam", "params": {"max_grad_norm": 1.0}})",
       "optimizer.params.max_grad_norm: not supported as an optimizer parameter, use gradient_clipping instead"},
      {R"("optimizer": {"type": "Adam", "params": {"amsgrad": true}})", "optimizer.params.amsgrad: amsgrad is not"},
      {R"("optimizer": {"type": "SGD", "params": {"nesterov": true}})",
       "optimizer.params.nesterov: nesterov momentum requires momentum > 0 and dampening == 0, got 'true'"},
      {R"("optimizer": "Adam")", "optimizer: expected an object, got 'Adam'"},
      {R"("scheduler": {"type": "StepLR"})",
       "scheduler.type: expected one of WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle, LRRangeTest,"
       " got 'StepLR'"},
      {R"("scheduler": {"type": "WarmupLR", "params": {"warmup_type": "cosine"}})",
       "scheduler.params.warmup_type: expected one of log, linear, got 'cosine'"},
      {R"("scheduler": {"type": "WarmupDecayLR"})",
       "scheduler.params.total_num_steps: required by WarmupDecayLR, got 'nothing'"},
      {R"("scheduler": {"type": "OneCycle", "params": {"cycle_max_lr": 0.1}})",
       "scheduler.params.cycle_min_lr: required by OneCycle, got 'nothing'"},
      {R"("scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 0, "cycle_max_lr": 1,
          "cycle_first_step_size": 0}})",
       "scheduler.params.cycle_first_step_size: expected an integer >= 1, got '0'"},
      {R"("scheduler": {"type": "LRRangeTest", "params": {"lr_range_test_step_size": 0}})",
       "scheduler.params.lr_range_test_step_size: expected an integer >= 1, got '0'"},
      {R"("scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 10, "warmup_num_steps": 10}})",
       "scheduler.params.total_num_steps: must differ from max(2, warmup_num_steps)"},
      {R"("fp16": {"enabled": true}, "bf16": {"enabled": true})",
       "bf16.enabled: fp16 and bf16 modes cannot be enabled at the same time, got 'true'"},
      {R"("fp16": {"enabled": true, "fp16_master_weights_and_grads": true})",
       "fp16.fp16_master_weights_and_grads: only supported with zero_optimization.stage 2, not stage 0, got 'true'"},
      {R"("fp16": {"enabled": 1})", "fp16.enabled: expected true or false, got '1'"},
      {R"("fp16": {"loss_scale": -1})", "fp16.loss_scale: expected a number >= 0, got '-1'"},
      {R"("fp16": {"loss_scale_window": 0})", "fp16.loss_scale_window: expected an integer in [1, 2147483647]"},
      {R"("fp16": {"hysteresis": 0})", "fp16.hysteresis: expected an integer in [1, 2147483647], got '0'"},
      {R"("fp16": {"initial_scale_power": 200})", "fp16.initial_scale_power: expected an integer in [0, 127]"},
      {R"("fp16": {"min_loss_scale": 0})", "fp16.min_loss_scale: expected a number > 0, got '0'"},
      {R"("communication_data_type": "int8")",
       "communication_data_type: expected one of fp32, fp16, bf16, got 'int8'"},
      {R"("gradient_clipping": -1.0)", "gradient_clipping: expected a number >= 0, got '-1.0'"},
      {R"("gradient_clipping": "1.0")", "gradient_clipping: expected a number, got '1.0'"},
      {R"("steps_per_print": 0)", "steps_per_print: expected an integer >= 1, got '0'"},
      {R"("wall_clock_breakdown": "true")", "wall_clock_breakdown: expected true or false, got 'true'"},
      {R"("gradient_accumulation_steps": "two")", "gradient_accumulation_steps: expected an integer, got 'two'"},
      {R"("train_micro_batch_size_per_gpu": true)", "train_micro_batch_size_per_gpu: expected an integer"},
      {R"("train_micro_batch_size_per_gpu": 3)",
       "train_batch_size is not equal to train_micro_batch_size_per_gpu * gradient_accumulation_steps *"
       " world_size, got 4 != 3 * 1 * 1"},
  }));
  std::string text = "{\"train_batch_size\": 4, " + body + "}";
  INFO(text);
  CHECK_THROWS_WITH(parseConfigText(text, 1, "cfg.json"), Contains("cfg.json: " + message));
  CHECK_THROWS_AS(parseConfigText(text, 1, "cfg.json"), ConfigError);
  setWarningSinkForTesting(nullptr);
}

TEST_CASE("ConfigError is a std::invalid_argument so torch-free callers can catch it", "[runtime][config]") {
  CHECK_THROWS_AS(parseConfigText("{}", 1, "empty.json"), std::invalid_argument);
  CHECK_THROWS_WITH(parseConfigText("{}", 1, "empty.json"),
                    "empty.json: either train_batch_size or train_micro_batch_size_per_gpu needs to be provided,"
                    " got neither");
}
