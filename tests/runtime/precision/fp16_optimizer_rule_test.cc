// Stage 0's schedule: DeepSpeed's FP16_Optimizer._update_scale (fp16/fused_optimizer.py), which differs
// from ZeRO's DynamicLossScaler: no hysteresis, the scale grows one step later, no error at the minimum,
// and a different log line. The table is worked out by hand from the Python rule quoted in each row.

#include <c10/util/Exception.h>
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "runtime/precision/fp16_scale_keys.h"
#include "runtime/precision/loss_scaler.h"

using dsrt::precision::Fp16ScaleKeys;
using dsrt::precision::LossScaler;
using dsrt::precision::LossScaleRule;

TEST_CASE("stage 0 follows FP16_Optimizer's schedule: growth when iter - last_overflow - 1 is a multiple of the window",
          "[runtime][precision]") {
  Fp16ScaleKeys keys;
  keys.fp16Enabled = true;
  keys.initialScalePower = 3;
  keys.lossScaleWindow = 2;
  keys.hysteresis = 4;  // FP16_Optimizer ignores hysteresis
  const auto spec = dsrt::precision::fp16OptimizerSpecFromFp16(keys);
  REQUIRE(spec.rule == LossScaleRule::kFp16Optimizer);
  LossScaler scaler(spec);
  struct Row {
    bool overflow;
    double scale;
    const char* message;
  };
  const std::vector<Row> rows{
      {false, 8, ""},   // iter 0: stable 0
      {false, 8, ""},   // iter 1: stable 1
      {false, 16, ""},  // iter 2: stable 2 -> x2 (DynamicLossScaler would have grown at iter 1)
      {true, 8, "[Rank 0] Overflow detected. Skipping step. Attempted loss scale: 16, reducing to 8.0"},
      {false, 8, ""},   // iter 4: stable 0
      {false, 8, ""},   // iter 5: stable 1
      {false, 16, ""},  // iter 6: stable 2
      {true, 8, "[Rank 0] Overflow detected. Skipping step. Attempted loss scale: 16.0, reducing to 8.0"},
      {true, 4, "[Rank 0] Overflow detected. Skipping step. Attempted loss scale: 8.0, reducing to 4.0"},
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO("iteration " << i);
    const auto u = scaler.update(rows[i].overflow);
    CHECK(u.skipStep == rows[i].overflow);
    CHECK(u.scale == rows[i].scale);
    CHECK(u.message == rows[i].message);
  }
  CHECK(scaler.state().lastOverflowIter == 8);
  CHECK(scaler.state().curIter == 9);
}

TEST_CASE("stage 0's scale starts at 2^initial_scale_power even with no key written and stops at the minimum",
          "[runtime][precision]") {
  Fp16ScaleKeys keys;
  keys.fp16Enabled = true;
  auto spec = dsrt::precision::fp16OptimizerSpecFromFp16(keys);
  CHECK(spec.initScale == 65536.0);  // ZeRO's DynamicLossScaler() would start at 2^32
  CHECK(spec.scaleWindow == 1000);
  keys.initialScalePower = 1;
  LossScaler scaler(dsrt::precision::fp16OptimizerSpecFromFp16(keys));
  CHECK(scaler.update(true).scale == 1.0);
  const auto u = scaler.update(true);  // at the minimum: FP16_Optimizer keeps going, no exception
  CHECK(u.skipStep);
  CHECK(u.scale == 1.0);
  keys.lossScale = 64;
  const auto fixed = dsrt::precision::fp16OptimizerSpecFromFp16(keys);
  CHECK_FALSE(fixed.dynamic);
  CHECK(fixed.staticScale == 64);
}
