#include "runtime/precision/fp16_scale_keys.h"

#include <cmath>

namespace dsrt::precision {

LossScalerSpec lossScalerSpecFromFp16(const Fp16ScaleKeys& keys) {
  LossScalerSpec spec;
  if (!keys.fp16Enabled || keys.lossScale != 0.0) {
    spec.dynamic = false;
    spec.staticScale = keys.fp16Enabled ? keys.lossScale : 1.0;
    return spec;
  }
  const bool anyKey = keys.initialScalePower || keys.lossScaleWindow || keys.hysteresis ||
                      keys.consecutiveHysteresis || keys.minLossScale;
  if (!anyKey) {
    return spec;  // DynamicLossScaler() class defaults
  }
  spec.initScale = std::ldexp(1.0, static_cast<int>(keys.initialScalePower.value_or(16)));
  spec.scaleWindow = keys.lossScaleWindow.value_or(1000);
  spec.delayedShift = keys.hysteresis.value_or(2);
  spec.consecutiveHysteresis = keys.consecutiveHysteresis.value_or(false);
  spec.minScale = keys.minLossScale.value_or(1.0);
  return spec;
}

LossScalerSpec fp16OptimizerSpecFromFp16(const Fp16ScaleKeys& keys) {
  LossScalerSpec spec = lossScalerSpecFromFp16(keys);
  spec.rule = LossScaleRule::kFp16Optimizer;
  if (!spec.dynamic) {
    return spec;
  }
  spec.initScale = std::ldexp(1.0, static_cast<int>(keys.initialScalePower.value_or(16)));
  spec.scaleWindow = keys.lossScaleWindow.value_or(1000);
  spec.minScale = keys.minLossScale.value_or(1.0);
  spec.delayedShift = 1;
  spec.consecutiveHysteresis = false;
  spec.raiseErrorAtMinScale = false;
  return spec;
}

}  // namespace dsrt::precision
