#include "runtime/estimate/estimate_report.h"

#include <cstdio>
#include <stdexcept>
#include <string>

namespace dsrt::estimate {
namespace {

// f'{OffloadDeviceEnum.cpu:4}' on Python >= 3.11 formats a (str, Enum) member as its str(), so the
// real DeepSpeed prints the class-qualified name; matching it keeps our tables diffable against it.
constexpr const char* kCpu = "OffloadDeviceEnum.cpu";

std::string header(const EstimateInput& in, bool withLargest) {
  std::string out = "Estimated memory needed for params, optim states and gradients for a:\n";
  out += "HW: Setup with " + std::to_string(in.numNodes) + (in.numNodes > 1 ? " nodes, " : " node, ") +
         std::to_string(in.numGpusPerNode) + (in.numGpusPerNode > 1 ? " GPUs" : " GPU") + " per node.\n";
  // int(total_params/1e6): truncation of the float quotient.
  out += "SW: Model with " + std::to_string(static_cast<int64_t>(in.totalParams / 1e6)) + "M total params";
  if (withLargest) {
    out += ", " + std::to_string(static_cast<int64_t>(in.largestLayerParams / 1e6)) + "M largest layer params";
  }
  out += ".\n  per CPU  |  per GPU |   Options\n";
  return out;
}

std::string sizes(const EstimateRow& row) {
  const double gib = 1024.0 * 1024.0 * 1024.0;
  char buf[64];
  std::snprintf(buf, sizeof buf, " %7.2fGB | %6.2fGB | ", static_cast<double>(row.cpuBytes) / gib,
                static_cast<double>(row.gpuBytes) / gib);
  return buf;
}

void checkStage(int stage) {
  if (stage != 2 && stage != 3) {
    throw std::invalid_argument("estimate: stage must be 2 or 3, got '" + std::to_string(stage) + "'");
  }
}

}  // namespace

std::string formatTable(const EstimateInput& in, int stage, const std::vector<EstimateRow>& rows) {
  checkStage(stage);
  std::string out = header(in, stage == 3);
  for (const EstimateRow& row : rows) {
    if (stage == 2) {
      out += sizes(row) + "offload_optimizer=" + (row.cpuOffload ? kCpu : "none") + "\n";
    } else {
      out += sizes(row) + "offload_param=" + (row.cpuOffloadParams ? kCpu : "none") +
             ", offload_optimizer=" + (row.cpuOffload ? kCpu : "none") + ", zero_init=" + (row.zeroInit ? "1" : "0") +
             "\n";
    }
  }
  return out;
}

std::string formatZero2Table(const EstimateInput& in) { return formatTable(in, 2, zero2Rows(in)); }

std::string formatZero3Table(const EstimateInput& in) { return formatTable(in, 3, zero3Rows(in)); }

nlohmann::json estimateJson(const EstimateInput& in, int stage, const std::vector<EstimateRow>& rows) {
  checkStage(stage);
  nlohmann::json doc = {{"stage", stage},
                        {"total_params", in.totalParams},
                        {"num_gpus_per_node", in.numGpusPerNode},
                        {"num_nodes", in.numNodes},
                        {"additional_buffer_factor", in.additionalBufferFactor}};
  if (stage == 3) {
    doc["largest_layer_params"] = in.largestLayerParams;
    doc["largest_layer_memory_bytes"] = largestLayerMemory(in);
  }
  nlohmann::json list = nlohmann::json::array();
  for (const EstimateRow& row : rows) {
    nlohmann::json r = {{"offload_optimizer", row.cpuOffload ? "cpu" : "none"}};
    if (stage == 3) {
      r["offload_param"] = row.cpuOffloadParams ? "cpu" : "none";
      r["zero_init"] = row.zeroInit;
    }
    r["per_cpu_bytes"] = row.cpuBytes;
    r["per_gpu_bytes"] = row.gpuBytes;
    list.push_back(r);
  }
  doc["rows"] = list;
  return doc;
}

}  // namespace dsrt::estimate
