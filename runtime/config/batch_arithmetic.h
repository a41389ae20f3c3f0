#pragma once
// DeepSpeed's batch arithmetic (runtime/config.py _set_batch_related_parameters + _batch_assertion) as a
// pure function, shared by parseConfig() and anything that re-plans batches for another world size.

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/config/deepspeed_config.h"

namespace dsrt::config {

/// Fills in whichever of the three batch keys are absent (Python floor division, as DeepSpeed), then checks
/// all three are > 0 and train == micro * gas * worldSize. Throws ConfigError prefixed with `source`.
BatchConfig resolveBatchConfig(std::optional<int64_t> trainBatchSize,
                               std::optional<int64_t> microBatchPerGpu,
                               std::optional<int64_t> gradientAccumulationSteps,
                               int worldSize,
                               const std::string& source);

}  // namespace dsrt::config
