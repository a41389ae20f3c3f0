#pragma once
// The error ds_elastic and computeElasticConfig throw. Its kind mirrors the exception class DeepSpeed's
// elasticity code raises for the same input, so tests can check that both refuse the same configs.

#include <string>

#include "common/error.h"

namespace dsrun::launcher::elastic {

/// Which DeepSpeed exception the same input produces.
enum class ElasticErrorKind {
  kConfig,                 ///< ElasticityConfigError: a missing, mistyped or out-of-range key
  kElasticity,             ///< ElasticityError: e.g. num_gpus_per_node not divisible by model_parallel_size
  kIncompatibleWorldSize,  ///< ElasticityIncompatibleWorldSize: -w is not one of the valid GPU counts
  kOther,                  ///< DeepSpeed fails with a plain Python error (ValueError, TypeError, ...)
};

/// An elasticity config that cannot be used; what() is one line naming the file and the key.
class ElasticError : public ConfigError {
 public:
  ElasticError(ElasticErrorKind kind, const std::string& message) : ConfigError(message), kind_(kind) {}
  ElasticErrorKind kind() const { return kind_; }

 private:
  ElasticErrorKind kind_;  ///< the DeepSpeed exception class this corresponds to
};

/// "config", "elasticity", "incompatible_world_size" or "other", for test tables and messages.
const char* kindName(ElasticErrorKind kind);

}  // namespace dsrun::launcher::elastic
