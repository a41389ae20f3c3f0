#include "runtime/config/section_parsers.h"

#include <algorithm>

namespace dsrt::config {
namespace {

// Parameters the scheduler's Python constructor takes without a default.
double requiredDouble(JsonReader& params, const std::string& key, const std::string& scheduler) {
  std::optional<double> v = params.optDouble(key);
  if (!v) {
    params.failValue(key, "required by " + scheduler, "nothing");
  }
  return *v;
}

void parseWarmup(JsonReader& params, SchedulerConfig& out) {
  out.warmupMinLr = params.getDouble("warmup_min_lr", out.warmupMinLr);
  out.warmupMaxLr = params.getDouble("warmup_max_lr", out.warmupMaxLr);
  out.warmupNumSteps = params.getInt("warmup_num_steps", out.warmupNumSteps, 0);
  // DeepSpeed only warns about an unknown warmup_type and falls back to log; a typo deserves an error.
  std::optional<std::string> type = params.optChoice("warmup_type", {"log", "linear"});
  out.warmupType = type == "linear" ? WarmupType::Linear : WarmupType::Log;
}

void parseTotalSteps(JsonReader& params, SchedulerConfig& out, const std::string& scheduler) {
  std::optional<int64_t> total = params.optInt("total_num_steps");
  if (!total) {
    params.failValue("total_num_steps", "required by " + scheduler, "nothing");
  }
  out.totalNumSteps = *total;
  int64_t warmup = std::max<int64_t>(2, out.warmupNumSteps);
  if (out.totalNumSteps < warmup) {
    params.warn(params.keyPath("total_num_steps") + ": " + std::to_string(out.totalNumSteps) +
                " is less than warmup_num_steps " + std::to_string(out.warmupNumSteps));
  }
}

void parseOneCycle(JsonReader& params, SchedulerConfig& out) {
  out.cycleMinLr = requiredDouble(params, "cycle_min_lr", "OneCycle");
  out.cycleMaxLr = requiredDouble(params, "cycle_max_lr", "OneCycle");
  out.decayLrRate = params.getDouble("decay_lr_rate", out.decayLrRate);
  // A first step size of 0 makes DeepSpeed divide 0 by 0 on the first step.
  out.cycleFirstStepSize = params.getInt("cycle_first_step_size", out.cycleFirstStepSize, 1);
  out.cycleSecondStepSize = params.getInt("cycle_second_step_size", out.cycleFirstStepSize, 0);
  out.cycleFirstStairCount = params.getInt("cycle_first_stair_count", out.cycleFirstStairCount);
  out.cycleSecondStairCount = params.getInt("cycle_second_stair_count", out.cycleFirstStairCount);
  out.decayStepSize = params.getInt("decay_step_size", out.decayStepSize, 0);
  out.cycleMomentum = params.getBool("cycle_momentum", out.cycleMomentum);
  out.cycleMinMom = params.getDouble("cycle_min_mom", out.cycleMinMom);
  out.cycleMaxMom = params.getDouble("cycle_max_mom", out.cycleMaxMom);
  out.decayMomRate = params.getDouble("decay_mom_rate", out.decayMomRate);
}

void parseRangeTest(JsonReader& params, SchedulerConfig& out) {
  out.lrRangeTestMinLr = params.getDouble("lr_range_test_min_lr", out.lrRangeTestMinLr);
  out.lrRangeTestStepSize = params.getInt("lr_range_test_step_size", out.lrRangeTestStepSize, 1);
  out.lrRangeTestStepRate = params.getDouble("lr_range_test_step_rate", out.lrRangeTestStepRate);
  out.lrRangeTestStaircase = params.getBool("lr_range_test_staircase", out.lrRangeTestStaircase);
}

}  // namespace

SchedulerConfig parseSchedulerConfig(JsonReader& block, const std::optional<OptimizerConfig>& optimizer) {
  SchedulerConfig out;
  std::optional<std::string> type = block.optChoice(
      "type", {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle", "LRRangeTest"}, /*ignoreCase=*/true);
  if (!type) {
    block.fail("type", "expected one of WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle, LRRangeTest");
  }
  static const std::pair<const char*, SchedulerType> kTypes[] = {
      {"WarmupLR", SchedulerType::WarmupLR},         {"WarmupDecayLR", SchedulerType::WarmupDecayLR},
      {"WarmupCosineLR", SchedulerType::WarmupCosineLR}, {"OneCycle", SchedulerType::OneCycle},
      {"LRRangeTest", SchedulerType::LRRangeTest}};
  for (const auto& [name, value] : kTypes) {
    if (*type == name) {
      out.type = value;
    }
  }
  if (optimizer) {
    out.baseLr = optimizer->lr;
  }
  nlohmann::json empty = nlohmann::json::object();
  std::optional<JsonReader> given = block.child("params");
  JsonReader params = given ? *given : JsonReader(empty, block.keyPath("params"), block.source(), block.warnings());
  params.ignore({"last_batch_iteration"});
  switch (out.type) {
    case SchedulerType::WarmupLR:
      parseWarmup(params, out);
      break;
    case SchedulerType::WarmupDecayLR:
      parseWarmup(params, out);
      parseTotalSteps(params, out, *type);
      break;
    case SchedulerType::WarmupCosineLR:
      out.warmupNumSteps = params.getInt("warmup_num_steps", out.warmupNumSteps, 0);
      out.warmupType = params.optChoice("warmup_type", {"log", "linear"}) == "linear" ? WarmupType::Linear
                                                                                        : WarmupType::Log;
      out.warmupMinRatio = params.getDouble("warmup_min_ratio", out.warmupMinRatio);
      out.cosMinRatio = params.getDouble("cos_min_ratio", out.cosMinRatio);
      parseTotalSteps(params, out, *type);
      if (out.totalNumSteps == std::max<int64_t>(2, out.warmupNumSteps)) {
        params.fail("total_num_steps", "must differ from max(2, warmup_num_steps) (the cosine phase divides by"
                                       " their difference)");
      }
      break;
    case SchedulerType::OneCycle:
      parseOneCycle(params, out);
      break;
    case SchedulerType::LRRangeTest:
      parseRangeTest(params, out);
      break;
  }
  params.finish();
  block.finish();
  return out;
}

}  // namespace dsrt::config
