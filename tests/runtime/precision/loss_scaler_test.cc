// LossScaler against DeepSpeed's DynamicLossScaler: golden/loss_scaler.json holds, for injected overflow
// sequences, the scale, hysteresis, iteration and last-overflow iteration DeepSpeed's own code produced
// after every update (and where it raised at the minimum scale).

#include <c10/util/Exception.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <string>

#include "runtime/precision/fp16_scale_keys.h"
#include "runtime/precision/loss_scaler.h"

using dsrt::precision::Fp16ScaleKeys;
using dsrt::precision::LossScaler;
using dsrt::precision::LossScalerSpec;

namespace {

nlohmann::json golden() {
  const std::string path = std::string(DSRT_PRECISION_GOLDEN_DIR) + "/loss_scaler.json";
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

LossScalerSpec specOf(const nlohmann::json& j) {
  LossScalerSpec s;
  s.initScale = j.at("init_scale").get<double>();
  s.scaleFactor = j.at("scale_factor").get<double>();
  s.scaleWindow = j.at("scale_window").get<int64_t>();
  s.minScale = j.at("min_scale").get<double>();
  s.delayedShift = j.at("delayed_shift").get<int64_t>();
  s.consecutiveHysteresis = j.at("consecutive_hysteresis").get<bool>();
  s.raiseErrorAtMinScale = j.at("raise_error_at_min_scale").get<bool>();
  return s;
}

}  // namespace

TEST_CASE("LossScaler follows DeepSpeed's DynamicLossScaler on injected overflow sequences", "[runtime][precision]") {
  const nlohmann::json cases = golden();
  REQUIRE(cases.size() >= 9);
  for (const auto& c : cases) {
    const std::string name = c.at("name").get<std::string>();
    const std::string overflows = c.at("overflows").get<std::string>();
    const auto& rows = c.at("rows");
    const int64_t raisedAt = c.at("raised_at").get<int64_t>();
    LossScaler scaler(specOf(c.at("spec")));
    int64_t skipped = 0;
    for (size_t i = 0; i < overflows.size(); ++i) {
      INFO("case " << name << " update " << i);
      const bool overflow = overflows[i] == '1';
      if (static_cast<int64_t>(i) == raisedAt) {
        REQUIRE_THROWS_WITH(scaler.update(overflow), Catch::Contains("overflowed at the minimum loss scale"));
        break;
      }
      const double before = scaler.scale();
      const auto u = scaler.update(overflow);
      skipped += u.skipStep ? 1 : 0;
      CHECK(u.skipStep == overflow);
      CHECK(u.previousScale == before);
      CHECK(u.message.empty() == !overflow);
      const auto& row = rows.at(i);
      REQUIRE(u.scale == row.at(0).get<double>());
      REQUIRE(scaler.state().curHysteresis == row.at(1).get<int64_t>());
      REQUIRE(scaler.state().curIter == row.at(2).get<int64_t>());
      REQUIRE(scaler.state().lastOverflowIter == row.at(3).get<int64_t>());
    }
    CHECK(skipped == static_cast<int64_t>(std::count(overflows.begin(), overflows.begin() + rows.size(), '1')));
  }
}

TEST_CASE("LossScaler logs like DeepSpeed, keeps a static scale, resumes from saved state and rejects bad specs",
          "[runtime][precision]") {
  LossScalerSpec spec;
  spec.initScale = 1024;
  spec.delayedShift = 2;
  spec.scaleWindow = 2;
  LossScaler scaler(spec);
  CHECK(scaler.update(true).message ==
        "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 1024, but hysteresis is 2. Reducing hysteresis to 1");
  CHECK(scaler.update(true).message == "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 1024, reducing to 512");

  LossScaler resumed(spec);
  resumed.loadState(scaler.state());
  for (bool overflow : {false, false, true, false, false, false}) {
    const auto a = scaler.update(overflow);
    const auto b = resumed.update(overflow);
    CHECK(a.scale == b.scale);
  }
  CHECK(resumed.state().curIter == 8);

  LossScalerSpec fixed;
  fixed.dynamic = false;
  fixed.staticScale = 128;
  LossScaler staticScaler(fixed);
  const auto u = staticScaler.update(true);
  CHECK(u.skipStep);
  CHECK(u.scale == 128);
  CHECK_FALSE(staticScaler.update(false).skipStep);
  CHECK(staticScaler.scale() == 128);

  LossScalerSpec bad;
  bad.scaleWindow = 0;
  REQUIRE_THROWS_WITH(LossScaler(bad), Catch::Contains("loss_scale_window must be > 0, got '0'"));
  bad = LossScalerSpec{};
  bad.delayedShift = 0;
  REQUIRE_THROWS_WITH(LossScaler(bad), Catch::Contains("hysteresis must be >= 1, got '0'"));
  dsrt::precision::LossScalerState broken;
  broken.curScale = -1;
  REQUIRE_THROWS_WITH(resumed.loadState(broken), Catch::Contains("saved scale must be a positive number, got '-1'"));
}

TEST_CASE("lossScalerSpecFromFp16 applies DeepSpeed's defaults, which depend on whether any scale key is set",
          "[runtime][precision]") {
  Fp16ScaleKeys keys;
  SECTION("bf16 or fp32 training scales by a static 1") {
    const auto s = dsrt::precision::lossScalerSpecFromFp16(keys);
    CHECK_FALSE(s.dynamic);
    CHECK(s.staticScale == 1.0);
  }
  keys.fp16Enabled = true;
  SECTION("fp16 with a loss_scale is static") {
    keys.lossScale = 512;
    const auto s = dsrt::precision::lossScalerSpecFromFp16(keys);
    CHECK_FALSE(s.dynamic);
    CHECK(s.staticScale == 512);
  }
  SECTION("fp16 without scale keys uses DynamicLossScaler's class defaults") {
    const auto s = dsrt::precision::lossScalerSpecFromFp16(keys);
    CHECK(s.dynamic);
    CHECK(s.initScale == 4294967296.0);
    CHECK(s.delayedShift == 1);
    CHECK(s.scaleWindow == 1000);
  }
  SECTION("fp16 with any scale key uses the config defaults for the others") {
    keys.lossScaleWindow = 500;
    const auto s = dsrt::precision::lossScalerSpecFromFp16(keys);
    CHECK(s.initScale == 65536.0);
    CHECK(s.delayedShift == 2);
    CHECK(s.scaleWindow == 500);
    CHECK(s.minScale == 1.0);
    CHECK_FALSE(s.consecutiveHysteresis);
    keys.initialScalePower = 12;
    keys.minLossScale = 0.5;
    keys.consecutiveHysteresis = true;
    const auto t = dsrt::precision::lossScalerSpecFromFp16(keys);
    CHECK(t.initScale == 4096.0);
    CHECK(t.minScale == 0.5);
    CHECK(t.consecutiveHysteresis);
  }
}
