#pragma once
// Formats estimator rows as DeepSpeed's *_all_cold functions print them (byte for byte, including
// "OffloadDeviceEnum.cpu", which is what DeepSpeed's f'{OffloadDeviceEnum.cpu:4}' renders on Python
// >= 3.11), and as JSON for scripts. Pure: strings in, strings out.

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "runtime/estimate/memory_estimate.h"

namespace dsrt::estimate {

/// The table DeepSpeed prints for `stage` (2 or 3): its header, then one line per row of `rows`.
/// Throws std::invalid_argument for another stage.
std::string formatTable(const EstimateInput& in, int stage, const std::vector<EstimateRow>& rows);

/// estimate_zero2_model_states_mem_needs_all_cold's output: formatTable(in, 2, zero2Rows(in)).
std::string formatZero2Table(const EstimateInput& in);

/// estimate_zero3_model_states_mem_needs_all_cold's output: formatTable(in, 3, zero3Rows(in)).
std::string formatZero3Table(const EstimateInput& in);

/// {"stage": s, "total_params", "largest_layer_params", "num_gpus_per_node", "num_nodes",
///  "additional_buffer_factor", "rows": [{"offload_optimizer": "cpu"|"none", "offload_param" (stage 3),
///  "zero_init" (stage 3), "per_cpu_bytes", "per_gpu_bytes"}]} over `rows`; stage is 2 or 3.
nlohmann::json estimateJson(const EstimateInput& in, int stage, const std::vector<EstimateRow>& rows);

}  // namespace dsrt::estimate
