#pragma once
// One parser per ds_config block, each reading through a JsonReader so errors and warnings carry key
// paths. Internal to dsrt_config; parseConfig() in deepspeed_config.cc calls them in DeepSpeed's order.

#include <optional>

#include "runtime/config/deepspeed_config.h"
#include "runtime/config/json_reader.h"

namespace dsrt::config {

/// `zero_optimization` (object, or DeepSpeed's deprecated boolean form that also reads `allgather_size`).
ZeroConfig parseZeroConfig(JsonReader& root);

/// `optimizer` block; throws if `type` is missing or not Adam/AdamW/SGD.
OptimizerConfig parseOptimizerConfig(JsonReader& block);

/// `scheduler` block; `optimizer` supplies WarmupCosineLR's base lr when present.
SchedulerConfig parseSchedulerConfig(JsonReader& block, const std::optional<OptimizerConfig>& optimizer);

/// `fp16` block.
Fp16Config parseFp16Config(JsonReader& block);

/// `bf16` (or the old `bfloat16`) block.
Bf16Config parseBf16Config(JsonReader& block);

}  // namespace dsrt::config
