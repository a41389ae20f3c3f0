#include "runtime/checkpoint/checkpoint_states.h"

#include <ATen/ATen.h>

#include "runtime/checkpoint/checkpoint_error.h"
#include "runtime/checkpoint/checkpoint_file.h"
#include "runtime/checkpoint/repartition_plan.h"
#include "runtime/checkpoint/tensor_blobs.h"

namespace dsrt::checkpoint {
namespace {

constexpr const char* kModelKind = "dsrt_model_states";
constexpr const char* kOptimKind = "dsrt_optim_states";
constexpr const char* kModulePrefix = "module.";
constexpr const char* kOptimizerPrefix = "optimizer.";

// Keeps the contiguous CPU copies alive until the file is written.
struct BlobList {
  std::vector<at::Tensor> keep;
  std::vector<BlobView> views;
  void add(const std::string& name, const at::Tensor& t) {
    keep.push_back(t.detach().to(at::kCPU).contiguous());
    views.push_back(blobView(name, keep.back()));
  }
};

void expectKind(const CheckpointFile& f, const char* kind) {
  const std::string got = f.meta.value("kind", std::string());
  if (got != kind) throw CheckpointError(f.path + ": expected a " + std::string(kind) + " file, got '" + got + "'");
}

template <typename T>
T field(const CheckpointFile& f, const char* key) {
  try {
    return f.meta.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw CheckpointError(f.path + ": metadata field '" + key + "' missing or mistyped, got '" +
                          (f.meta.contains(key) ? f.meta[key].dump() : std::string("nothing")) + "'");
  }
}

optim::OptimizerState readState(const CheckpointFile& f, const std::string& prefix, const std::vector<std::string>& names,
                                int64_t numel) {
  optim::OptimizerState state;
  for (const std::string& name : names) {
    at::Tensor t = toTensor(f.tensor(prefix + name), f.path);
    if (numel >= 0 && t.numel() != numel) {
      throw CheckpointError(f.path + ": optimizer state '" + name + "' must have " + std::to_string(numel) +
                            " elements, got '" + std::to_string(t.numel()) + "'");
    }
    state.emplace_back(name, t);
  }
  return state;
}

std::vector<std::string> stateNames(const optim::OptimizerState& state) {
  std::vector<std::string> names;
  for (const auto& [name, t] : state) names.push_back(name);
  return names;
}

}  // namespace

void writeModelStates(const std::string& path, const ModelStates& s) {
  if (s.paramNames.size() != s.params.size()) {
    throw CheckpointError(path + ": " + std::to_string(s.params.size()) + " parameters but names for " +
                          std::to_string(s.paramNames.size()) + ", got '" + std::to_string(s.paramNames.size()) + "'");
  }
  nlohmann::json meta = {{"kind", kModelKind},        {"zero_stage", s.zeroStage},
                         {"world_size", s.worldSize}, {"param_names", s.paramNames},
                         {"engine", s.engineState},   {"client_state", s.clientState}};
  BlobList blobs;
  for (size_t i = 0; i < s.params.size(); ++i) blobs.add(kModulePrefix + s.paramNames[i], s.params[i]);
  if (s.plan) meta["partition"] = planToJson(*s.plan);
  if (s.zeroStage == 0) {
    meta["optimizer"] = {{"step", s.optimizerStep}, {"state_names", stateNames(s.optimizerState)}};
    for (const auto& [name, t] : s.optimizerState) blobs.add(kOptimizerPrefix + name, t);
  }
  writeCheckpointFile(path, meta, blobs.views);
}

ModelStates readModelStates(const std::string& path) {
  const CheckpointFile f = readCheckpointFile(path);
  expectKind(f, kModelKind);
  ModelStates s;
  s.zeroStage = field<int>(f, "zero_stage");
  s.worldSize = field<int>(f, "world_size");
  s.paramNames = field<std::vector<std::string>>(f, "param_names");
  s.engineState = field<nlohmann::json>(f, "engine");
  s.clientState = field<nlohmann::json>(f, "client_state");
  for (const std::string& name : s.paramNames) s.params.push_back(toTensor(f.tensor(kModulePrefix + name), path));
  if (f.meta.contains("partition")) s.plan = planFromJson(f.meta["partition"], path);
  if (s.zeroStage >= 1 && !s.plan) throw CheckpointError(path + ": ZeRO checkpoint without partition metadata, got 'stage " + std::to_string(s.zeroStage) + "'");
  if (s.zeroStage == 0) {
    const auto opt = field<nlohmann::json>(f, "optimizer");
    s.optimizerStep = opt.value("step", int64_t{0});
    s.optimizerState = readState(f, kOptimizerPrefix, opt.value("state_names", std::vector<std::string>{}), -1);
  }
  return s;
}

void writeOptimPartition(const std::string& path, const OptimPartition& p) {
  nlohmann::json meta = {{"kind", kOptimKind},           {"rank", p.rank},
                         {"zero_stage", p.zeroStage},    {"partition", planToJson(p.plan)},
                         {"step", p.step},               {"state_names", stateNames(p.state)}};
  BlobList blobs;
  blobs.add("fp32_flat_partition", p.fp32Partition);
  for (const auto& [name, t] : p.state) blobs.add(kOptimizerPrefix + name, t);
  writeCheckpointFile(path, meta, blobs.views);
}

OptimPartition readOptimPartition(const std::string& path, int expectedRank) {
  const CheckpointFile f = readCheckpointFile(path);
  expectKind(f, kOptimKind);
  OptimPartition p;
  p.rank = field<int>(f, "rank");
  if (p.rank != expectedRank) {
    throw CheckpointError(path + ": partition of rank " + std::to_string(expectedRank) + " expected, got '" +
                          std::to_string(p.rank) + "'");
  }
  p.zeroStage = field<int>(f, "zero_stage");
  p.plan = planFromJson(field<nlohmann::json>(f, "partition"), path);
  p.step = field<int64_t>(f, "step");
  p.fp32Partition = toTensor(f.tensor("fp32_flat_partition"), path);
  if (p.fp32Partition.numel() != p.plan.partitionNumel) {
    throw CheckpointError(path + ": fp32_flat_partition must have " + std::to_string(p.plan.partitionNumel) +
                          " elements, got '" + std::to_string(p.fp32Partition.numel()) + "'");
  }
  p.state = readState(f, kOptimizerPrefix, field<std::vector<std::string>>(f, "state_names"), p.plan.partitionNumel);
  return p;
}

}  // namespace dsrt::checkpoint
