#include "runtime/precision/precision_plan.h"

#include "runtime/precision/fp16_scale_keys.h"

namespace dsrt::precision {
namespace {

c10::ScalarType dtypeOf(config::DataType t) {
  switch (t) {
    case config::DataType::Fp16:
      return c10::kHalf;
    case config::DataType::Bf16:
      return c10::kBFloat16;
    case config::DataType::Fp32:
      break;
  }
  return c10::kFloat;
}

}  // namespace

PrecisionPlan planPrecision(const config::DeepSpeedConfig& cfg) {
  PrecisionPlan plan;
  plan.fp16 = cfg.fp16.enabled;
  plan.modelDtype = cfg.fp16.enabled ? c10::kHalf : cfg.bf16.enabled ? c10::kBFloat16 : c10::kFloat;
  plan.commDtype = cfg.communicationDataType ? dtypeOf(*cfg.communicationDataType) : plan.modelDtype;
  Fp16ScaleKeys keys;
  keys.fp16Enabled = cfg.fp16.enabled;
  keys.lossScale = cfg.fp16.lossScale;
  if (cfg.fp16.dynamicLossArgsExplicit) {
    // DeepSpeed passes all five once any is written (config.get_dynamic_loss_scale_args).
    keys.initialScalePower = cfg.fp16.initialScalePower;
    keys.lossScaleWindow = cfg.fp16.lossScaleWindow;
    keys.hysteresis = cfg.fp16.hysteresis;
    keys.consecutiveHysteresis = cfg.fp16.consecutiveHysteresis;
    keys.minLossScale = cfg.fp16.minLossScale;
  } else {
    keys.initialScalePower = std::nullopt;
  }
  if (cfg.zero.stage == 0) {
    // FP16_Optimizer gets initial_dynamic_scale = 2^initial_scale_power even without dynamic args.
    Fp16ScaleKeys stage0 = keys;
    stage0.initialScalePower = cfg.fp16.initialScalePower;
    plan.scaler = fp16OptimizerSpecFromFp16(stage0);
    if (!cfg.fp16.dynamicLossArgsExplicit && plan.scaler.dynamic) {
      plan.scaler.scaleWindow = 1000;
      plan.scaler.minScale = 1.0;
    }
  } else {
    plan.scaler = lossScalerSpecFromFp16(keys);
  }
  return plan;
}

}  // namespace dsrt::precision
