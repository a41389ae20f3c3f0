#include "runtime/config/deepspeed_config.h"

#include "runtime/config/batch_arithmetic.h"
#include "runtime/config/elasticity.h"
#include "runtime/config/section_parsers.h"
#include "runtime/config/top_level_keys.h"

namespace dsrt::config {
namespace {

// Top-level keys DeepSpeed understands that libdsrt parses no further (top_level_keys.h): an enabled
// unsupported block is a warning; an enabled block the Python package implements is recorded, so the C++
// front end can say that it ignores it (runtime/initialize.cc). Disabled blocks are silent either way.
void readUnparsedTopLevelKeys(JsonReader& root, const nlohmann::json& doc, DeepSpeedConfig& cfg) {
  for (const TopLevelKey& k : unparsedTopLevelKeys()) {
    root.has(k.key);  // known: finish() must not call it unknown
    auto it = doc.find(k.key);
    if (it == doc.end()) continue;
    const bool python = k.support == KeySupport::PythonPackage;
    if (!blockEnabled(*it, /*enabledByDefault=*/!python)) continue;
    if (python) {
      cfg.pythonPackageBlocks.push_back(k.key);
    } else {
      root.warn(std::string(k.key) + ": not supported by libdsrt, ignored (" + k.note + ")");
    }
  }
}

void parsePrecision(JsonReader& root, DeepSpeedConfig& cfg) {
  if (std::optional<JsonReader> fp16 = root.child("fp16")) {
    cfg.fp16 = parseFp16Config(*fp16);
  }
  // get_bfloat16_enabled: "bf16" wins over the old "bfloat16" when both are present.
  if (std::optional<JsonReader> bf16 = root.child("bf16")) {
    cfg.bf16 = parseBf16Config(*bf16);
    root.ignore({"bfloat16"});
  } else {
    root.deprecated("bfloat16", "bf16");
    if (std::optional<JsonReader> old = root.child("bfloat16")) {
      cfg.bf16 = parseBf16Config(*old);
    }
  }
  if (cfg.fp16.enabled && cfg.bf16.enabled) {
    root.failValue("bf16.enabled", "fp16 and bf16 modes cannot be enabled at the same time", "true");
  }
  if (cfg.fp16.enabled && cfg.fp16.masterWeightsAndGrads && cfg.zero.stage != 2) {
    root.failValue("fp16.fp16_master_weights_and_grads",
                   "only supported with zero_optimization.stage 2, not stage " + std::to_string(cfg.zero.stage),
                   "true");
  }
  if (std::optional<std::string> dtype = root.optChoice("communication_data_type", {"fp32", "fp16", "bf16"},
                                                        /*ignoreCase=*/true)) {
    cfg.communicationDataType = *dtype == "fp32" ? DataType::Fp32 : *dtype == "fp16" ? DataType::Fp16
                                                                                      : DataType::Bf16;
  }
}

}  // namespace

DeepSpeedConfig parseConfig(const nlohmann::json& doc, int worldSize, const std::string& source,
                            const std::optional<std::string>& schedulerElasticity) {
  DeepSpeedConfig cfg;
  cfg.source = source;
  cfg.worldSize = worldSize;
  if (!doc.is_object()) {
    throw ConfigError(source + ": expected a JSON object at the top level, got '" + describe(doc) + "'");
  }
  JsonReader root(doc, "", source, cfg.warnings);

  // Negative batch sizes are read as written so the arithmetic can report them as DeepSpeed does.
  std::optional<int64_t> train = root.optInt("train_batch_size");
  std::optional<int64_t> micro = root.optInt("train_micro_batch_size_per_gpu");
  std::optional<int64_t> gas = root.optInt("gradient_accumulation_steps");

  cfg.zero = parseZeroConfig(root);
  root.has("allgather_size");  // read by the deprecated boolean zero_optimization only
  if (std::optional<JsonReader> optimizer = root.child("optimizer")) {
    cfg.optimizer = parseOptimizerConfig(*optimizer);
  }
  if (std::optional<JsonReader> scheduler = root.child("scheduler")) {
    cfg.scheduler = parseSchedulerConfig(*scheduler, cfg.optimizer);
  }
  parsePrecision(root, cfg);
  cfg.gradientClipping = root.getDouble("gradient_clipping", 0.0, 0.0);
  cfg.stepsPerPrint = root.optInt("steps_per_print", 1);
  cfg.wallClockBreakdown = root.getBool("wall_clock_breakdown", false);
  cfg.prescaleGradients = root.getBool("prescale_gradients", false);
  cfg.gradientPredivideFactor = root.getDouble("gradient_predivide_factor", 1.0);
  if (!(cfg.gradientPredivideFactor > 0.0)) {
    root.fail("gradient_predivide_factor", "expected a number > 0");
  }
  // DeepSpeed checks elasticity before anything else reads the batch keys; dsrt validates the other keys
  // first so that a typo elsewhere is still reported. A disabled block is ignored silently, as there.
  const bool elastic = elasticityEnabled(doc);
  root.has("elasticity");
  readUnparsedTopLevelKeys(root, doc, cfg);
  root.finish();

  if (elastic) {
    const ElasticBatch batch = elasticBatch(doc, worldSize, schedulerElasticity, source, cfg.warnings);
    train = batch.trainBatchSize;
    micro = batch.microBatchPerGpu;
    gas = batch.gradientAccumulationSteps;
    cfg.elasticValidWorldSizes = batch.validGpus;
  }
  cfg.batch = resolveBatchConfig(train, micro, gas, worldSize, source);
  return cfg;
}

std::string toString(OptimizerType type) {
  switch (type) {
    case OptimizerType::Adam:
      return "adam";
    case OptimizerType::AdamW:
      return "adamw";
    case OptimizerType::SGD:
      return "sgd";
    case OptimizerType::Lion:
      return "lion";
    case OptimizerType::Adagrad:
      return "adagrad";
  }
  return "?";
}

std::string toString(SchedulerType type) {
  switch (type) {
    case SchedulerType::WarmupLR:
      return "WarmupLR";
    case SchedulerType::WarmupDecayLR:
      return "WarmupDecayLR";
    case SchedulerType::WarmupCosineLR:
      return "WarmupCosineLR";
    case SchedulerType::OneCycle:
      return "OneCycle";
    case SchedulerType::LRRangeTest:
      return "LRRangeTest";
  }
  return "?";
}

std::string toString(OffloadDevice device) { return device == OffloadDevice::Cpu ? "cpu" : "none"; }

std::string toString(DataType type) {
  return type == DataType::Fp32 ? "fp32" : type == DataType::Fp16 ? "fp16" : "bf16";
}

}  // namespace dsrt::config
