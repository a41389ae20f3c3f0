#include "runtime/estimate/memory_estimate.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dsrt::estimate {
namespace {

void validate(const EstimateInput& in) {
  auto fail = [](const char* field, const std::string& got) {
    throw std::invalid_argument(std::string("estimate: ") + field + ", got '" + got + "'");
  };
  if (in.totalParams < 0) fail("total_params must be >= 0", std::to_string(in.totalParams));
  if (in.largestLayerParams < 0) fail("largest_layer_params must be >= 0", std::to_string(in.largestLayerParams));
  if (in.numGpusPerNode < 1) fail("num_gpus_per_node must be >= 1", std::to_string(in.numGpusPerNode));
  if (in.numNodes < 1) fail("num_nodes must be >= 1", std::to_string(in.numNodes));
  if (!(in.additionalBufferFactor > 0)) {
    fail("additional_buffer_factor must be > 0", std::to_string(in.additionalBufferFactor));
  }
}

// Python's int() of a float truncates toward zero; every operand here is non-negative.
int64_t pyInt(double v) { return static_cast<int64_t>(v); }

}  // namespace

EstimateRow estimateZero2(const EstimateInput& in, bool cpuOffload) {
  validate(in);
  const int64_t totalGpus = static_cast<int64_t>(in.numNodes) * in.numGpusPerNode;
  EstimateRow row;
  row.cpuOffload = cpuOffload;
  // Operation order follows DeepSpeed's expressions so the doubles round exactly as Python's floats.
  if (cpuOffload) {
    row.gpuBytes = 2 * in.totalParams;
    row.cpuBytes = pyInt(static_cast<double>(in.totalParams * std::max<int64_t>(4 * totalGpus, 16)) * in.additionalBufferFactor);
  } else {
    // 2 = fp16 params; 18 = fp16 + fp32 grads, fp32 master params, Adam's two moments.
    row.gpuBytes = 2 * in.totalParams + pyInt(static_cast<double>(18 * in.totalParams) / static_cast<double>(totalGpus));
    row.cpuBytes = pyInt(static_cast<double>(in.totalParams * 4 * in.numGpusPerNode) * in.additionalBufferFactor);
  }
  return row;
}

int64_t largestLayerMemory(const EstimateInput& in) { return 4 * in.largestLayerParams; }

EstimateRow estimateZero3(const EstimateInput& in, bool cpuOffload, bool cpuOffloadParams, bool zeroInit) {
  validate(in);
  const double p = static_cast<double>(in.totalParams);
  const int64_t totalGpus = static_cast<int64_t>(in.numNodes) * in.numGpusPerNode;
  const double gpusFactor = 1.0 / in.numNodes;
  const double factor = in.additionalBufferFactor;
  const int64_t layerMem = largestLayerMemory(in);
  // total_params * max(4 * num_gpus_per_node, k * gpus_factor) * factor: Python's max returns the int
  // unless the float is larger, and int * int is exact before the float multiply.
  auto perNodeBytes = [&](int perParam) {
    const double share = perParam * gpusFactor;
    const int64_t local = 4 * static_cast<int64_t>(in.numGpusPerNode);
    const double base = share > static_cast<double>(local) ? p * share : static_cast<double>(in.totalParams * local);
    return pyInt(base * factor);
  };
  EstimateRow row{cpuOffload, cpuOffloadParams, zeroInit, 0, 0};
  if (cpuOffload && cpuOffloadParams) {
    row.gpuBytes = layerMem;
    row.cpuBytes = zeroInit ? pyInt(static_cast<double>(in.totalParams * 18) * gpusFactor * factor)
                            : perNodeBytes(18);
  } else if (cpuOffload) {
    row.gpuBytes = layerMem + pyInt(static_cast<double>(2 * in.totalParams) / static_cast<double>(totalGpus));
    row.cpuBytes = zeroInit ? pyInt(static_cast<double>(in.totalParams * 16) * gpusFactor * factor)
                            : perNodeBytes(16);
  } else {
    row.gpuBytes = layerMem + pyInt(static_cast<double>(18 * in.totalParams) / static_cast<double>(totalGpus));
    row.cpuBytes = zeroInit ? pyInt(static_cast<double>(in.largestLayerParams * 4 * in.numGpusPerNode) * factor)
                            : pyInt(static_cast<double>(in.totalParams * 4 * in.numGpusPerNode) * factor);
  }
  return row;
}

std::vector<EstimateRow> zero2Rows(const EstimateInput& in) {
  return {estimateZero2(in, true), estimateZero2(in, false)};
}

std::vector<EstimateRow> zero3Rows(const EstimateInput& in) {
  std::vector<EstimateRow> rows;
  for (bool offload : {true, false}) {
    for (bool offloadParams : {true, false}) {
      if (!offload && offloadParams) {
        continue;
      }
      for (bool zeroInit : {true, false}) {
        rows.push_back(estimateZero3(in, offload, offloadParams, zeroInit));
      }
    }
  }
  return rows;
}

}  // namespace dsrt::estimate
