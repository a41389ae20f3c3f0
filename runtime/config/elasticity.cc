#include "runtime/config/elasticity.h"

#include <cstdlib>

#include "elastic/elastic_batch_params.h"
#include "elastic/elastic_config.h"
#include "elastic/elastic_error.h"
#include "runtime/config/config_error.h"
#include "runtime/config/config_warnings.h"
#include "runtime/config/deepspeed_config.h"

namespace dsrt::config {

bool elasticityEnabled(const nlohmann::json& doc) {
  if (!doc.is_object() || !doc.contains(dsrun::elastic::kElasticityKey)) {
    return false;
  }
  const nlohmann::json& block = doc.at(dsrun::elastic::kElasticityKey);
  return !block.is_object() || (block.contains("enabled") && dsrun::elastic::truthy(block.at("enabled")));
}

std::optional<std::string> schedulerElasticityConfig() {
  const char* value = std::getenv(dsrun::elastic::kElasticityConfigEnv);
  return value ? std::optional<std::string>(value) : std::nullopt;
}

ElasticBatch elasticBatch(const nlohmann::json& doc, int worldSize, const std::optional<std::string>& schedulerConfig,
                          const std::string& source, std::vector<std::string>& warnings) {
  dsrun::elastic::ElasticBatchParams params;
  try {
    params = dsrun::elastic::elasticBatchParams(doc, worldSize, schedulerConfig, source);
  } catch (const dsrun::elastic::ElasticError& e) {
    throw ElasticityConfigError(dsrun::elastic::kindName(e.kind()), e.what());
  }
  ElasticBatch out;
  out.trainBatchSize = params.trainBatchSize;
  out.microBatchPerGpu = params.microBatchPerGpu;
  out.gradientAccumulationSteps = params.gradientAccumulationSteps;
  out.validGpus.assign(params.validGpus.begin(), params.validGpus.end());
  // ignore_non_elastic_batch_info: DeepSpeed logs each overridden key and uses the elastic value.
  const std::pair<const char*, int64_t> imposed[] = {{"train_batch_size", out.trainBatchSize},
                                                     {"train_micro_batch_size_per_gpu", out.microBatchPerGpu},
                                                     {"gradient_accumulation_steps", out.gradientAccumulationSteps}};
  for (const auto& [key, value] : imposed) {
    if (doc.contains(key)) {
      const std::string message = source + ": [Elasticity] overriding " + key + ": " + doc.at(key).dump() + " -> " +
                                  std::to_string(value);
      warnings.push_back(message);
      warnOnce(message);
    }
  }
  return out;
}

}  // namespace dsrt::config
