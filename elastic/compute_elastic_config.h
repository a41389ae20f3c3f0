#pragma once
// computeElasticConfig: DeepSpeed's compute_elastic_config() (deepspeed/elasticity/elasticity.py) as a
// pure function of the parsed ds_config, the intended world size and the WORLD_SIZE variable.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace dsrun::elastic {

/// What DeepSpeed returns: the total train batch size, the GPU counts (data-parallel sizes for v0.2)
/// it supports, and, when a world size was given, the micro batch size per GPU.
struct ElasticResult {
  long long finalBatchSize = 0;
  std::optional<std::vector<long long>> validGpus;  ///< empty-optional where DeepSpeed returns None
  std::optional<long long> microBatchSize;          ///< set only when worldSize > 0
  /// v0.2: the micro batch its search settled on for the current GPU count (what DeepSpeed returns with
  /// return_microbatch); unset for v0.1.
  std::optional<long long> candidateMicroBatchSize;
};

/// Runs DeepSpeed's elasticity algorithm on `dsConfig` (a whole ds_config object with an "elasticity"
/// block). worldSize 0 means "not given"; v0.2 then takes the current GPU count from `worldSizeEnv`
/// (the WORLD_SIZE variable, if set) as DeepSpeed does. `source` names the config in messages.
/// Throws ElasticError (kind = DeepSpeed's exception class) for every input DeepSpeed rejects.
ElasticResult computeElasticConfig(const nlohmann::json& dsConfig, long long worldSize,
                                   const std::optional<std::string>& worldSizeEnv, const std::string& source);

}  // namespace dsrun::elastic
