#pragma once
// DeepSpeed's model-state memory estimator (estimate_zero2_model_states_mem_needs in
// runtime/zero/stage_1_and_2.py, estimate_zero3_model_states_mem_needs in runtime/zero/stage3.py):
// pure formulas, evaluated in double with DeepSpeed's operation order so every byte count equals
// Python's int() of the same expression. Torch-free.

#include <cstdint>
#include <vector>

namespace dsrt::estimate {

/// The hardware and the knobs the formulas take. Counts are DeepSpeed's argument names.
struct EstimateInput {
  int64_t totalParams = 0;             ///< parameters of the whole model (shared ones once)
  int64_t largestLayerParams = 0;      ///< parameters of the largest module (stage 3 only)
  int numGpusPerNode = 1;              ///< num_gpus_per_node
  int numNodes = 1;                    ///< num_nodes
  double additionalBufferFactor = 1.5; ///< additional_buffer_factor
};

/// One offload option and its per-CPU / per-GPU bytes (one row of DeepSpeed's table).
struct EstimateRow {
  bool cpuOffload = false;        ///< offload_optimizer=cpu
  bool cpuOffloadParams = false;  ///< offload_param=cpu (stage 3 only)
  bool zeroInit = false;          ///< zero.Init() used to build the model (stage 3 only)
  int64_t cpuBytes = 0;           ///< per CPU (node)
  int64_t gpuBytes = 0;           ///< per GPU
};

/// estimate_zero2_model_states_mem_needs: {cpu, gpu} bytes for one option. Throws
/// std::invalid_argument naming the field when a count is negative or a GPU/node count below 1.
EstimateRow estimateZero2(const EstimateInput& in, bool cpuOffload);

/// estimate_zero3_model_states_mem_needs: {cpu, gpu} bytes for one option (the third value DeepSpeed
/// returns, largest_layer_memory, is largestLayerMemory()). Throws like estimateZero2.
EstimateRow estimateZero3(const EstimateInput& in, bool cpuOffload, bool cpuOffloadParams, bool zeroInit);

/// 4 bytes per parameter of the largest layer: what stage 3 gathers at once.
int64_t largestLayerMemory(const EstimateInput& in);

/// The rows of DeepSpeed's *_all_cold tables, in its order: stage 2 offload {true,false}; stage 3
/// (offload, offload_params, zero_init) over {T,F}^3 without offload=false & offload_params=true.
std::vector<EstimateRow> zero2Rows(const EstimateInput& in);
std::vector<EstimateRow> zero3Rows(const EstimateInput& in);

}  // namespace dsrt::estimate
