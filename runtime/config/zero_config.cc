#include "runtime/config/section_parsers.h"

#include <sstream>

namespace dsrt::config {
namespace {

// DeepSpeedZeroConfig accepts each stage3_* field under its alias and under its field name
// (populate_by_name); giving both would be ambiguous, so that is an error here.
std::optional<int64_t> aliasedInt(JsonReader& zero, const std::string& alias, const std::string& name) {
  std::optional<int64_t> a = zero.optInt(alias, 0);
  std::optional<int64_t> b = zero.optInt(name, 0);
  if (a && b) {
    zero.fail(name, "give either " + zero.keyPath(alias) + " or " + zero.keyPath(name) + ", not both");
  }
  return a ? a : b;
}

OffloadConfig parseOffload(JsonReader& block, bool isOptimizer) {
  OffloadConfig out;
  std::optional<std::string> device = block.optChoice("device", {"none", "cpu", "nvme"});
  if (device == "nvme") {
    block.fail("device", "offload to nvme is not supported by libdsrt, expected one of none, cpu");
  }
  out.device = device == "cpu" ? OffloadDevice::Cpu : OffloadDevice::None;
  out.pinMemory = block.getBool("pin_memory", false);
  // NVMe-only tuning knobs: valid DeepSpeed keys with no effect once the device is cpu or none.
  for (const char* key : {"nvme_path", "buffer_count", "buffer_size", "max_in_cpu", "pipeline_read",
                          "pipeline_write", "fast_init"}) {
    block.has(key);
  }
  if (isOptimizer) {
    out.ratio = block.getDouble("ratio", 1.0, 0.0, 1.0);
  }
  block.finish();
  return out;
}

// DeepSpeed's deprecated booleans (cpu_offload, cpu_offload_param) map true to {device: cpu}.
void applyDeprecatedOffload(JsonReader& zero, const char* oldKey, const char* newKey, OffloadConfig& target,
                            bool newGiven) {
  zero.deprecated(oldKey, zero.keyPath(newKey));
  std::optional<bool> old = zero.optBool(oldKey);
  if (!old) {
    return;
  }
  if (newGiven) {
    zero.fail(oldKey, std::string("cannot be given together with ") + zero.keyPath(newKey));
  }
  if (*old) {
    target.device = OffloadDevice::Cpu;
  }
}

}  // namespace

ZeroConfig parseZeroConfig(JsonReader& root) {
  ZeroConfig out;
  if (root.has("zero_optimization") && root.raw("zero_optimization").is_boolean()) {
    root.deprecated("zero_optimization", "a zero_optimization object with \"stage\"");
    out.stage = root.raw("zero_optimization").get<bool>() ? 1 : 0;
    if (out.stage > 0) {
      out.allgatherBucketSize = root.getInt("allgather_size", out.allgatherBucketSize, 0);
    }
    return out;
  }
  std::optional<JsonReader> zero = root.child("zero_optimization");
  if (!zero) {
    return out;
  }
  if (std::optional<int64_t> stage = zero->optInt("stage")) {
    if (*stage < 0 || *stage > 3) {
      zero->fail("stage", "expected one of 0, 1, 2, 3");
    }
    out.stage = static_cast<int>(*stage);
  }
  out.contiguousGradients = zero->getBool("contiguous_gradients", out.contiguousGradients);
  out.reduceScatter = zero->getBool("reduce_scatter", out.reduceScatter);
  out.reduceBucketSize = zero->getInt("reduce_bucket_size", out.reduceBucketSize, 0);
  out.allgatherBucketSize = zero->getInt("allgather_bucket_size", out.allgatherBucketSize, 0);
  out.allgatherPartitions = zero->getBool("allgather_partitions", out.allgatherPartitions);
  std::optional<bool> overlap = zero->optBool("overlap_comm");
  out.overlapCommExplicit = overlap.has_value();
  out.overlapComm = overlap.value_or(out.stage == 3);  // DeepSpeed's overlap_comm_valid validator
  out.roundRobinGradients = zero->getBool("round_robin_gradients", out.roundRobinGradients);
  out.ignoreUnusedParameters = zero->getBool("ignore_unused_parameters", out.ignoreUnusedParameters);
  out.loadFromFp32Weights = zero->getBool("load_from_fp32_weights", out.loadFromFp32Weights);
  out.subGroupSize = zero->getInt("sub_group_size", out.subGroupSize, 0);

  std::optional<JsonReader> offloadOptimizer = zero->child("offload_optimizer");
  if (offloadOptimizer) {
    out.offloadOptimizer = parseOffload(*offloadOptimizer, true);
  }
  std::optional<JsonReader> offloadParam = zero->child("offload_param");
  if (offloadParam) {
    out.offloadParam = parseOffload(*offloadParam, false);
  }
  applyDeprecatedOffload(*zero, "cpu_offload", "offload_optimizer", out.offloadOptimizer,
                         offloadOptimizer.has_value());
  applyDeprecatedOffload(*zero, "cpu_offload_param", "offload_param", out.offloadParam, offloadParam.has_value());
  zero->deprecated("cpu_offload_use_pin_memory", zero->keyPath("offload_optimizer.pin_memory"));
  zero->optBool("cpu_offload_use_pin_memory");

  out.prefetchBucketSize =
      aliasedInt(*zero, "stage3_prefetch_bucket_size", "prefetch_bucket_size").value_or(out.prefetchBucketSize);
  out.paramPersistenceThreshold =
      aliasedInt(*zero, "stage3_param_persistence_threshold", "param_persistence_threshold")
          .value_or(out.paramPersistenceThreshold);
  out.modelPersistenceThreshold =
      aliasedInt(*zero, "stage3_model_persistence_threshold", "model_persistence_threshold")
          .value_or(out.modelPersistenceThreshold);
  out.maxLiveParameters =
      aliasedInt(*zero, "stage3_max_live_parameters", "max_live_parameters").value_or(out.maxLiveParameters);
  out.maxReuseDistance =
      aliasedInt(*zero, "stage3_max_reuse_distance", "max_reuse_distance").value_or(out.maxReuseDistance);

  std::optional<bool> gatherAlias = zero->optBool("stage3_gather_16bit_weights_on_model_save");
  std::optional<bool> gatherName = zero->optBool("gather_16bit_weights_on_model_save");
  zero->deprecated("stage3_gather_fp16_weights_on_model_save",
                   zero->keyPath("stage3_gather_16bit_weights_on_model_save"));
  std::optional<bool> gatherOld = zero->optBool("stage3_gather_fp16_weights_on_model_save");
  if (int(gatherAlias.has_value()) + int(gatherName.has_value()) + int(gatherOld.has_value()) > 1) {
    zero->fail("stage3_gather_16bit_weights_on_model_save",
               "give only one of stage3_gather_16bit_weights_on_model_save, gather_16bit_weights_on_model_save,"
               " stage3_gather_fp16_weights_on_model_save");
  }
  out.gather16bitWeightsOnModelSave = gatherAlias.value_or(gatherName.value_or(gatherOld.value_or(false)));

  zero->ignore({"use_multi_rank_bucket_allreduce", "elastic_checkpoint", "stage3_module_granularity_threshold",
                "module_granularity_threshold", "stage3_use_all_reduce_for_fetch_params",
                "use_all_reduce_for_fetch_params", "legacy_stage1", "zero_hpz_partition_size",
                "zero_quantized_weights", "zero_quantized_nontrainable_weights", "zero_quantized_gradients",
                "zeropp_loco_param", "mics_shard_size", "mics_hierarchical_params_gather",
                "memory_efficient_linear", "pipeline_loading_checkpoint", "override_module_apply",
                "log_trace_cache_warnings"});
  zero->finish();

  if (out.offloadOptimizer.ratio < 1.0 && out.stage != 3) {
    std::ostringstream ratio;
    ratio << out.offloadOptimizer.ratio;
    zero->failValue("offload_optimizer.ratio",
                    "partial offloading (ratio < 1) needs stage 3, not stage " + std::to_string(out.stage),
                    ratio.str());
  }
  if (out.offloadParam.enabled() && out.stage != 3) {
    zero->warn(zero->keyPath("offload_param") + ": only used by stage 3, ignored at stage " +
               std::to_string(out.stage));
  }
  return out;
}

}  // namespace dsrt::config
