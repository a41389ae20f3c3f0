#include "runtime/config/lr_schedule.h"

#include <catch2/catch.hpp>

#include "runtime/config/config_warnings.h"
#include "tests/runtime/config/golden_file.h"

using namespace dsrt::config;

namespace {

// Builds the scheduler through parseConfig, so the golden runs also cover parameter parsing and defaults.
DeepSpeedConfig configFor(const nlohmann::json& c) {
  nlohmann::json doc = {
      {"train_batch_size", 1},
      {"optimizer", {{"type", c["optimizer_has_betas"].get<bool>() ? "AdamW" : "SGD"}, {"params", {{"lr", c["lr"]}}}}},
      {"scheduler", {{"type", c["type"]}, {"params", c["params"]}}}};
  return parseConfig(doc, 1, "golden:" + c["name"].get<std::string>());
}

}  // namespace

TEST_CASE("learningRate and oneCycleBetas reproduce DeepSpeed's schedulers step by step", "[runtime][config]") {
  setWarningSinkForTesting([](const std::string&) {});  // e.g. "total_num_steps is less than warmup"
  nlohmann::json cases = testing::loadGolden("lr_schedules.json");
  REQUIRE(cases.size() == 14);
  size_t rows = 0;
  for (const nlohmann::json& c : cases) {
    DeepSpeedConfig cfg = configFor(c);
    REQUIRE(cfg.scheduler);
    const bool hasBetas = c["optimizer_has_betas"].get<bool>();
    for (const nlohmann::json& row : c["rows"]) {
      int64_t it = row[0].get<int64_t>();
      double lr = std::stod(row[1].get<std::string>());
      INFO(c["name"].get<std::string>() << " last_batch_iteration " << it);
      // Same operations in the same order as Python: agreement to the last bit or two of a double.
      REQUIRE(learningRate(*cfg.scheduler, it) == lr);
      std::optional<std::array<double, 2>> betas = oneCycleBetas(*cfg.scheduler, it, hasBetas);
      if (cfg.scheduler->type == SchedulerType::OneCycle && hasBetas) {
        REQUIRE(betas);
        CHECK((*betas)[0] == Approx(std::stod(row[2].get<std::string>())).epsilon(1e-14));
        CHECK((*betas)[1] == Approx(std::stod(row[3].get<std::string>())).epsilon(1e-14));
      } else {
        // DeepSpeed leaves the optimizer's betas alone (the golden rows show the untouched 0.9 / 0.999).
        CHECK_FALSE(betas);
        if (hasBetas) {
          CHECK(row[2].get<std::string>() == "0.9");
        }
      }
      ++rows;
    }
  }
  CHECK(rows > 150);
  setWarningSinkForTesting(nullptr);
}

TEST_CASE("WarmupLR holds warmup_max_lr after warmup and WarmupDecayLR reaches zero at total_num_steps",
          "[runtime][config]") {
  SchedulerConfig s;
  s.type = SchedulerType::WarmupLR;
  s.warmupMinLr = 0.0;
  s.warmupMaxLr = 0.5;
  s.warmupNumSteps = 4;
  s.warmupType = WarmupType::Linear;
  CHECK(learningRate(s, 1) == Approx(0.125));
  CHECK(learningRate(s, 4) == 0.5);
  CHECK(learningRate(s, 1000000) == 0.5);
  s.type = SchedulerType::WarmupDecayLR;
  s.totalNumSteps = 10;
  CHECK(learningRate(s, 10) == 0.0);
  CHECK(learningRate(s, 50) == 0.0);  // max(0, ...) keeps it from going negative
  CHECK(learningRate(s, 7) == Approx(0.5 * 3.0 / 6.0));
}

TEST_CASE("OneCycle returns to cycle_min_lr at the end of the cycle and stays there without decay",
          "[runtime][config]") {
  SchedulerConfig s;
  s.type = SchedulerType::OneCycle;
  s.cycleMinLr = 0.1;
  s.cycleMaxLr = 1.1;
  s.cycleFirstStepSize = 2;
  s.cycleSecondStepSize = 2;
  CHECK(learningRate(s, -1) == Approx(0.1));
  CHECK(learningRate(s, 1) == Approx(1.1));  // peak after cycle_first_step_size steps
  CHECK(learningRate(s, 3) == Approx(0.1));
  CHECK(learningRate(s, 100) == 0.1);
  CHECK((*oneCycleBetas(s, 1, true))[0] == Approx(0.8));  // momentum moves opposite to lr
  CHECK_FALSE(oneCycleBetas(s, 1, false));
}
