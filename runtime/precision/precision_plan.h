#pragma once
// What the ds_config's fp16 / bf16 / communication_data_type blocks mean for one engine, as a value:
// the dtype the model is converted to (DeepSpeed's module.half() / module.bfloat16()), the dtype
// gradients travel in, and the loss scaler (ZeRO's DynamicLossScaler rule at stages 1-3, FP16_Optimizer's
// at stage 0). Pure: the engine carries it out.

#include <c10/core/ScalarType.h>

#include "runtime/config/deepspeed_config.h"
#include "runtime/precision/loss_scaler.h"

namespace dsrt::precision {

struct PrecisionPlan {
  /// fp16: kHalf, bf16: kBFloat16, otherwise kFloat. Parameters are converted before the strategy
  /// is built; strategies keep fp32 master copies whenever this is not kFloat.
  c10::ScalarType modelDtype = c10::kFloat;
  /// communication_data_type, or the model dtype when absent (DeepSpeed's engine.communication_data_type).
  c10::ScalarType commDtype = c10::kFloat;
  /// fp16 only: the loss is scaled and every boundary checks the gradients for inf/NaN.
  bool fp16 = false;
  /// The loss scale schedule (static 1 without fp16).
  LossScalerSpec scaler;
};

/// DeepSpeed's mapping of the precision blocks for `cfg.zero.stage`. Never throws: the config parser
/// already refused fp16 together with bf16.
PrecisionPlan planPrecision(const config::DeepSpeedConfig& cfg);

}  // namespace dsrt::precision
