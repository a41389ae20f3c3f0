#include "runtime/checkpoint/consolidate.h"

#include <algorithm>

#include <ATen/ATen.h>

#include "runtime/checkpoint/checkpoint_commit.h"
#include "runtime/checkpoint/checkpoint_error.h"
#include "runtime/checkpoint/checkpoint_file.h"
#include "runtime/checkpoint/checkpoint_layout.h"
#include "runtime/checkpoint/checkpoint_states.h"
#include "runtime/checkpoint/repartition.h"
#include "runtime/checkpoint/tensor_blobs.h"

namespace dsrt::checkpoint {

std::string resolveTag(const std::string& dir, const std::optional<std::string>& tag) {
  std::string resolved;
  if (tag) {
    resolved = *tag;
  } else if (auto latest = readLatest(dir)) {
    resolved = *latest;
  } else {
    throw CheckpointError(latestPath(dir) + ": no such file, and no tag given (is '" + dir + "' a checkpoint directory?)");
  }
  validateTag(resolved);
  if (!pathExists(tagDir(dir, resolved))) {
    const std::string staging = stagingDir(dir, resolved);
    throw CheckpointError(tagDir(dir, resolved) + ": no such checkpoint" +
                          (pathExists(staging) ? " (" + staging + " exists: that save never finished)" : std::string()));
  }
  return resolved;
}

NamedTensors consolidateFp32(const std::string& dir, const std::optional<std::string>& tag) {
  const std::string resolved = resolveTag(dir, tag);
  const std::string tdir = tagDir(dir, resolved);
  const ModelStates model = readModelStates(tdir + "/" + modelStatesFileName(0, 0));
  NamedTensors out;
  if (model.zeroStage == 0) {
    for (size_t i = 0; i < model.params.size(); ++i) out.emplace_back(model.paramNames[i], model.params[i].to(at::kFloat));
    return out;
  }
  const zero::PartitionPlan& plan = *model.plan;
  std::vector<at::Tensor> parts;
  for (int r = 0; r < model.worldSize; ++r) {
    const std::string path = tdir + "/" + optimStatesFileName(r, model.zeroStage);
    OptimPartition p = readOptimPartition(path, r);
    if (p.plan.paramNumels != plan.paramNumels || p.plan.worldSize != plan.worldSize) {
      throw CheckpointError(path + ": partition plan differs from the module file's, got world size '" +
                            std::to_string(p.plan.worldSize) + "'");
    }
    parts.push_back(p.fp32Partition);
  }
  const at::Tensor flat = consolidateFlat(parts, plan);
  for (size_t i = 0; i < model.params.size(); ++i) {
    out.emplace_back(model.paramNames[i],
                     flat.narrow(0, plan.paramOffsets[i], plan.paramNumels[i]).view(model.params[i].sizes()).clone());
  }
  return out;
}

namespace {

void writeNamed(const std::string& path, const NamedTensors& tensors, const char* kind, bool toFp32) {
  std::vector<at::Tensor> keep;
  std::vector<BlobView> views;
  nlohmann::json names = nlohmann::json::array();
  keep.reserve(tensors.size());  // views borrow keep's storage: no reallocation while filling
  for (const auto& [name, t] : tensors) {
    keep.push_back(toFp32 ? t.detach().to(at::kCPU, at::kFloat).contiguous() : t.detach().to(at::kCPU).contiguous());
    views.push_back(blobView(name, keep.back()));
    names.push_back(name);
  }
  writeCheckpointFile(path, {{"kind", kind}, {"param_names", names}}, views);
}

NamedTensors readNamed(const std::string& path, const std::vector<std::string>& kinds) {
  const CheckpointFile f = readCheckpointFile(path);
  const std::string kind = f.meta.value("kind", std::string());
  if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
    throw CheckpointError(path + ": expected a " + kinds.front() + " file, got '" + kind + "'");
  }
  NamedTensors out;
  for (const Blob& b : f.tensors) out.emplace_back(b.name, toTensor(b, path));
  return out;
}

}  // namespace

void writeFp32StateFile(const std::string& path, const NamedTensors& tensors) {
  writeNamed(path, tensors, "dsrt_fp32_state_dict", true);
}

NamedTensors readFp32StateFile(const std::string& path) { return readNamed(path, {"dsrt_fp32_state_dict"}); }

void writeStateDictFile(const std::string& path, const NamedTensors& tensors) {
  writeNamed(path, tensors, "dsrt_state_dict", false);
}

NamedTensors readStateDictFile(const std::string& path) {
  return readNamed(path, {"dsrt_state_dict", "dsrt_fp32_state_dict"});
}

}  // namespace dsrt::checkpoint
