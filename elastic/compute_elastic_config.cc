#include "elastic/compute_elastic_config.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <stdexcept>

#include "elastic/batch_search.h"
#include "elastic/elastic_config.h"
#include "elastic/elastic_error.h"
#include "elastic/elastic_text.h"

namespace dsrun::elastic {
namespace {

using nlohmann::json;

std::string versionText(const json& version) {
  return version.is_string() ? version.get<std::string>() : version.dump();
}

// v0.2 without an explicit world size reads WORLD_SIZE, accepting it only if it is all digits
// (Python's str.isnumeric(), restricted to ASCII).
long long worldSizeFromEnv(const std::optional<std::string>& env, const std::string& source) {
  long long value = 0;
  bool digits = env && !env->empty() && std::all_of(env->begin(), env->end(), [](char c) { return c >= '0' && c <= '9'; });
  // All digits: from_chars fails only on overflow.
  if (!digits || std::from_chars(env->data(), env->data() + env->size(), value).ec != std::errc()) {
    throw ElasticError(ElasticErrorKind::kConfig,
                       strCat(source, ": elasticity version 0.2 needs the world size to compute a valid batch size ",
                              "(pass -w/--world-size or set WORLD_SIZE), got WORLD_SIZE='",
                              env ? *env : std::string("<unset>"), "'"));
  }
  return value;
}

// DeepSpeed picks the largest distinct micro batch that divides the per-GPU batch.
long long largestDividingMicroBatch(long long finalBatch, long long worldSize, const std::vector<long long>& micro) {
  std::set<long long> distinct(micro.begin(), micro.end());
  for (auto it = distinct.rbegin(); it != distinct.rend(); ++it) {
    if (finalBatch / worldSize % *it == 0) {
      return *it;
    }
  }
  // Unreachable: the batch search only keeps batch sizes some micro batch divides for every valid count.
  throw std::logic_error(strCat("no micro batch divides final_batch_size ", finalBatch, " / world size ", worldSize));
}

}  // namespace

ElasticResult computeElasticConfig(const json& dsConfig, long long worldSize,
                                   const std::optional<std::string>& worldSizeEnv, const std::string& source) {
  if (!dsConfig.is_object()) {
    throw ElasticError(ElasticErrorKind::kOther,
                       strCat(source, ": expected a JSON object (a DeepSpeed config), got '", dsConfig.dump(), "'"));
  }
  if (worldSize < 0) {
    throw ElasticError(ElasticErrorKind::kOther, strCat(source, ": world size must be >= 0, got '", worldSize, "'"));
  }
  auto block = dsConfig.find(kElasticityKey);
  if (block == dsConfig.end()) {
    throw ElasticError(ElasticErrorKind::kConfig,
                       strCat(source, ": 'elasticity' is missing from the config; add it to run an elastic job"));
  }
  if (block->is_object() && !truthy(block->value("enabled", json(false)))) {
    throw ElasticError(ElasticErrorKind::kConfig,
                       strCat(source, ": elasticity is disabled; set elasticity.enabled to true to run an elastic job"));
  }
  const ElasticConfig config = parseElasticConfig(*block, source);

  const double version = versionNumber(config.version, source);
  if (config.modelParallelSize > 1 && version != 0.2) {
    throw ElasticError(ElasticErrorKind::kConfig,
                       strCat(source, ": elasticity.version ", versionText(config.version),
                              " does not support model parallelism (needs 0.2), got model_parallel_size '",
                              config.modelParallelSize, "'"));
  }
  if (version > kLatestElasticityVersion) {
    throw ElasticError(ElasticErrorKind::kConfig,
                       strCat(source, ": elasticity.version must be <= ", kLatestElasticityVersion,
                              " (the latest this runtime supports), got '", versionText(config.version), "'"));
  }

  ElasticResult result;
  if (version == 0.1) {
    BatchChoice choice = compatibleGpusV01(config.microBatchSizes, config.maxTrainBatchSize, config.minGpus,
                                           config.maxGpus, config.preferLargerBatch, source);
    result.finalBatchSize = choice.batchSize;
    result.validGpus = std::move(choice.validGpus);
  } else if (version == 0.2) {
    V02Input in;
    in.microBatches = config.microBatchSizes;
    in.maxBatch = config.maxTrainBatchSize;
    in.currentNumGpus = worldSize != 0 ? worldSize : worldSizeFromEnv(worldSizeEnv, source);
    in.minGpus = config.minGpus;
    in.maxGpus = config.maxGpus;
    in.preferLarger = config.preferLargerBatch;
    in.numGpusPerNode = config.numGpusPerNode;
    in.modelParallelSize = config.modelParallelSize;
    V02Choice choice = compatibleGpusV02(in, source);
    result.finalBatchSize = choice.choice.batchSize;
    result.validGpus = std::move(choice.choice.validGpus);
    result.candidateMicroBatchSize = choice.microBatch;
  } else {
    throw ElasticError(ElasticErrorKind::kOther,
                       strCat(source, ": elasticity.version must be 0.1 or 0.2, got '", versionText(config.version), "'"));
  }

  if (worldSize > 0) {
    const auto& valid = result.validGpus;
    if (!valid || std::find(valid->begin(), valid->end(), worldSize) == valid->end()) {
      throw ElasticError(valid ? ElasticErrorKind::kIncompatibleWorldSize : ElasticErrorKind::kOther,
                         strCat(source, ": world size ", worldSize, " is not one of the valid GPU counts ",
                                pythonListRepr(valid), " for final_batch_size ", result.finalBatchSize));
    }
    result.microBatchSize = largestDividingMicroBatch(result.finalBatchSize, worldSize, config.microBatchSizes);
  }
  return result;
}

}  // namespace dsrun::elastic
