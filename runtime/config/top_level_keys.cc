#include "runtime/config/top_level_keys.h"

namespace dsrt::config {

const std::vector<TopLevelKey>& unparsedTopLevelKeys() {
  using K = KeySupport;
  static const std::vector<TopLevelKey> table = {
      {"tensorboard", K::PythonPackage, "written by dsrt.monitor (torch.utils.tensorboard), rank 0"},
      {"csv_monitor", K::PythonPackage, "written by dsrt.monitor, DeepSpeed's file layout, rank 0"},
      {"wandb", K::PythonPackage, "written by dsrt.monitor through the wandb client, rank 0"},
      {"comms_logger", K::PythonPackage, "dsrt.comm.log_summary() and per-collective log lines"},
      {"flops_profiler", K::PythonPackage, "per-module profile at profile_step (torch's FLOP counter)"},
      {"comet", K::NotSupported, "use tensorboard, csv_monitor or wandb"},
      {"sparse_gradients", K::NotSupported, "gradients are always reduced dense"},
      {"disable_allgather", K::NotSupported, "ZeRO always all-gathers updated partitions"},
      {"dump_state", K::NotSupported, "no engine state dump"},
      {"vocabulary_size", K::NotSupported, "only used by DeepSpeed's sparse attention"},
      {"memory_breakdown", K::NotSupported, "use engine.model_state_bytes()"},
      {"eigenvalue", K::NotSupported, "no eigenvalue-based layer-wise scaling"},
      {"progressive_layer_drop", K::NotSupported, "no progressive layer dropping"},
      {"checkpoint", K::NotSupported, "checkpoint engine options; dsrt writes its own layout"},
      {"data_types", K::NotSupported, "gradient accumulation dtype follows the model dtype"},
      {"amp", K::NotSupported, "use fp16 or bf16"},
      {"sparse_attention", K::NotSupported, "no sparse attention kernels"},
      {"pipeline", K::NotSupported, "data parallel only"},
      {"activation_checkpointing", K::NotSupported, "deepspeed.checkpointing.checkpoint() works without it"},
      {"autotuning", K::NotSupported, "no autotuner"},
      {"nebula", K::NotSupported, "no Nebula checkpoint service"},
      {"compression_training", K::NotSupported, "no compression library"},
      {"quantize_training", K::NotSupported, "no quantization-aware training"},
      {"data_efficiency", K::NotSupported, "no curriculum / data routing"},
      {"curriculum_learning", K::NotSupported, "no curriculum learning"},
      {"zero_allow_untested_optimizer", K::PythonPackage, "true: a client RMSprop etc. steps the ZeRO partitions"},
      {"zero_force_ds_cpu_optimizer", K::PythonPackage, "false: such a client optimizer steps offload's CPU ones"},
      {"aio", K::NotSupported, "no NVMe offload"},
      {"dataloader_drop_last", K::NotSupported, "deepspeed_io keeps the last partial batch"},
      {"weight_quantization", K::NotSupported, "no weight quantization"},
      {"timers", K::NotSupported, "wall_clock_breakdown prints the timers"},
      {"tensor_parallel", K::NotSupported, "data parallel only"},
      {"hybrid_engine", K::NotSupported, "no RLHF hybrid engine"},
      {"graph_harvesting", K::NotSupported, "no CUDA graph capture"},
      {"seq_parallel_comm_data_type", K::NotSupported, "no sequence parallelism"},
      {"use_data_before_expert_parallel_", K::NotSupported, "no mixture of experts"},
      {"compile", K::NotSupported, "no DeepCompile (engine.compile() works without it)"},
      {"train_batch_size_per_gpu", K::NotSupported, "use train_micro_batch_size_per_gpu"},
  };
  return table;
}

std::string toString(KeySupport support) {
  return support == KeySupport::PythonPackage ? "python package" : "not supported";
}

bool blockEnabled(const nlohmann::json& value, bool enabledByDefault) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_object()) {
    auto it = value.find("enabled");
    if (it == value.end()) return enabledByDefault;
    return !it->is_boolean() || it->get<bool>();
  }
  return !value.is_null();
}

}  // namespace dsrt::config
