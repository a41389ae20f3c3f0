#include "runtime/checkpoint/strategy_checkpoint.h"

#include <ATen/ATen.h>

#include <exception>

#include "runtime/checkpoint/checkpoint_commit.h"
#include "runtime/checkpoint/checkpoint_error.h"
#include "runtime/checkpoint/checkpoint_layout.h"
#include "runtime/checkpoint/checkpoint_states.h"
#include "runtime/checkpoint/consolidate.h"
#include "runtime/checkpoint/module_weights.h"
#include "runtime/checkpoint/repartition.h"
#include "runtime/optim/flat_optimizer.h"
#include "runtime/dist_env.h"
#include "runtime/zero/partitioned_strategy.h"

namespace dsrt::checkpoint {
namespace {

// Every rank learns whether any rank failed, instead of a barrier a failed rank would never reach;
// the first failing rank's message travels with the failure so every rank throws something useful.
void agree(const StrategyHandle& h, const std::string& localError, const std::string& what) {
  at::Tensor flag = at::full({1}, localError.empty() ? 0.0f : float(h.rank + 1),
                             at::TensorOptions().dtype(at::kFloat).device(collectiveDevice(*h.pg)));
  std::vector<at::Tensor> v{flag};
  c10d::AllreduceOptions opts;
  opts.reduceOp = c10d::ReduceOp::MAX;
  h.pg->allreduce(v, opts)->wait();
  const int failed = static_cast<int>(flag.item<float>()) - 1;
  if (failed < 0) return;
  if (!localError.empty()) throw CheckpointError(localError);
  throw CheckpointError(what + " failed on rank " + std::to_string(failed) + " (see its error)");
}

template <typename Fn>
std::string attempt(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what()[0] ? e.what() : "unknown error";
  }
  return "";
}

std::vector<std::string> namesOf(const StrategyHandle& h) {
  if (!h.paramNames.empty()) return h.paramNames;
  std::vector<std::string> names;
  for (size_t i = 0; i < h.params.size(); ++i) names.push_back("param." + std::to_string(i));
  return names;
}

zero::PartitionedStrategy* zeroOf(const StrategyHandle& h) {
  auto* z = dynamic_cast<zero::PartitionedStrategy*>(h.strategy);
  if (h.zeroStage >= 1 && z == nullptr) {
    throw CheckpointError("checkpoint: ZeRO stage " + std::to_string(h.zeroStage) +
                          " strategy does not expose its partition plan, got 'no PartitionedStrategy'");
  }
  return z;
}

std::vector<int64_t> shapeOf(const StrategyHandle& h, size_t i) {
  if (i < h.paramShapes.size()) return h.paramShapes[i];
  return h.params[i].sizes().vec();
}

NamedShapes modelShapes(const StrategyHandle& h) {
  NamedShapes out;
  out.names = namesOf(h);
  const size_t count = h.paramShapes.empty() ? h.params.size() : h.paramShapes.size();
  for (size_t i = 0; i < count; ++i) out.shapes.push_back(shapeOf(h, i));
  out.names.resize(count);
  return out;
}

NamedShapes savedShapes(const ModelStates& m) {
  NamedShapes out;
  out.names = m.paramNames;
  for (const auto& t : m.params) out.shapes.push_back(t.sizes().vec());
  return out;
}

// Weights-only load (load_optimizer_states=False / load_module_only=True): the module file's full
// weights set the parameters and any fp32 master; the optimizer state is not touched. Collective: every
// rank read the same file, so every rank agrees on whether kept parameters must be gathered first.
void loadWeightsOnly(const StrategyHandle& h, const ModelStates& m, const WeightMatch& match,
                     c10::ScalarType dtype, const std::string& what) {
  std::vector<at::Tensor> full(match.source.size());
  bool keepSome = false;
  for (int64_t s : match.source) keepSome = keepSome || s < 0;
  if (keepSome) {
    std::string err = attempt([&] { full = h.strategy->fullParams(); });  // ZeRO gathers
    agree(h, err, what);
  }
  std::string err = attempt([&] {
    for (size_t i = 0; i < full.size(); ++i) {
      at::Tensor w = match.source[i] >= 0 ? m.params[static_cast<size_t>(match.source[i])] : full[i];
      // DeepSpeed's masters come from the 16-bit module weights, so they hold the rounded values.
      full[i] = dtype == at::kFloat ? w.to(at::kFloat) : w.to(dtype).to(at::kFloat);
    }
    h.strategy->loadFullParams(full);
  });
  agree(h, err, what);
}

}  // namespace

void saveStrategyCheckpoint(const StrategyHandle& h, const std::string& dir, const std::string& tag,
                            const nlohmann::json& engineState, const nlohmann::json& clientState,
                            const FileWrittenHook& afterFile, bool updateLatest) {
  validateTag(tag);
  std::string staging = stagingDir(dir, tag);
  agree(h, h.rank == 0 ? attempt([&] { beginStaging(dir, tag); }) : "", "checkpoint save (staging " + staging + ")");
  // Collective (ZeRO-3 gathers), so every rank takes part even though only rank 0 writes them.
  std::vector<at::Tensor> fullParams;
  std::string err = attempt([&] { fullParams = h.strategy->fullParams(); });
  agree(h, err, "checkpoint save of " + staging + " (gathering parameters)");
  err = attempt([&] {
    optim::FlatOptimizer& opt = h.strategy->optimizer();
    zero::PartitionedStrategy* z = zeroOf(h);
    if (h.rank == 0) {
      ModelStates m;
      m.zeroStage = h.zeroStage;
      m.worldSize = h.worldSize;
      m.paramNames = namesOf(h);
      m.params = fullParams;
      m.engineState = engineState;
      m.clientState = clientState;
      if (z) {
        m.plan = z->plan();
      } else {
        m.optimizerState = opt.state();
        m.optimizerStep = opt.stepCount();
      }
      // Every stage, ZeRO-3 included, keeps the full parameters in rank 0's mp_rank_00 file (DeepSpeed's
      // stage 3 writes per-rank module partitions instead; fullParams() gathered them above).
      const std::string path = staging + "/" + modelStatesFileName(0, 0);
      writeModelStates(path, m);
      if (afterFile) afterFile(path);
    }
    if (z) {
      OptimPartition p;
      p.rank = h.rank;
      p.zeroStage = h.zeroStage;
      p.plan = z->plan();
      p.fp32Partition = z->masterPartition();
      p.state = opt.state();
      p.step = opt.stepCount();
      const std::string path = staging + "/" + optimStatesFileName(h.rank, h.zeroStage);
      writeOptimPartition(path, p);
      if (afterFile) afterFile(path);
    }
  });
  agree(h, err, "checkpoint save of " + staging);
  agree(h, h.rank == 0 ? attempt([&] { commitStaging(dir, tag, updateLatest); }) : "", "checkpoint commit of " + staging);
}

LoadedStates loadStrategyCheckpoint(const StrategyHandle& h, const std::string& dir,
                                    const std::optional<std::string>& tag, const StrategyLoadOptions& options) {
  LoadedStates out;
  at::Tensor master;
  ModelStates m;
  WeightMatch match;
  std::string err = attempt([&] {
    out.tag = resolveTag(dir, tag);
    const std::string tdir = tagDir(dir, out.tag);
    const std::string modelPath = tdir + "/" + modelStatesFileName(0, 0);
    m = readModelStates(modelPath);
    out.engineState = m.engineState;
    out.clientState = m.clientState;
    out.savedWorldSize = m.worldSize;
    if (options.optimizerStates && (m.zeroStage == 0) != (h.zeroStage == 0)) {
      throw CheckpointError(modelPath + ": saved at ZeRO stage " + std::to_string(m.zeroStage) +
                            ", cannot load into stage " + std::to_string(h.zeroStage) + ", got 'stage " +
                            std::to_string(m.zeroStage) + "'\n  hint: load_checkpoint(load_optimizer_states=False) "
                            "or load_module_only=True loads the weights alone");
    }
    match = matchModuleWeights(savedShapes(m), modelShapes(h), options.strict, modelPath);
    if (!options.optimizerStates) return;  // the weights are set below, collectively
    if (!match.identity()) {
      throw CheckpointError(modelPath + ": load_module_strict=False: the optimizer state belongs to the "
                            "checkpoint's parameters, which differ from the model's (missing: " +
                            joinNames(match.missing) + "; unexpected: " + joinNames(match.unexpected) +
                            "), got 'load_optimizer_states=True'\n  hint: load_checkpoint(load_optimizer_states="
                            "False) or load_module_only=True loads the matching weights alone");
    }
    optim::FlatOptimizer& opt = h.strategy->optimizer();
    zero::PartitionedStrategy* z = zeroOf(h);
    if (!z) {
      h.strategy->loadFullParams(m.params);
      opt.loadState(m.optimizerState, m.optimizerStep);
      return;
    }
    const zero::PartitionPlan& saved = *m.plan;
    const zero::PartitionPlan& target = z->plan();
    std::vector<OptimPartition> parts(saved.worldSize);
    int64_t step = 0;
    std::vector<std::string> names;
    for (int r : sourceRanks(saved, target, h.rank)) {
      parts[r] = readOptimPartition(tdir + "/" + optimStatesFileName(r, m.zeroStage), r);
      step = parts[r].step;
      names.clear();
      for (const auto& [name, t] : parts[r].state) names.push_back(name);
    }
    std::vector<at::Tensor> masters(saved.worldSize);
    for (int r : sourceRanks(saved, target, h.rank)) masters[r] = parts[r].fp32Partition;
    master = repartition(masters, saved, target, h.rank);
    optim::OptimizerState state;
    for (size_t k = 0; k < names.size(); ++k) {
      std::vector<at::Tensor> pieces(saved.worldSize);
      for (int r = 0; r < saved.worldSize; ++r) {
        if (parts[r].state.size() > k) pieces[r] = parts[r].state[k].second;
      }
      state.emplace_back(names[k], repartition(pieces, saved, target, h.rank));
    }
    if (names.empty()) {
      // A rank whose partition is all padding reads no file: its state is zeros of the right size.
      for (const auto& [name, t] : opt.state()) state.emplace_back(name, at::zeros_like(t));
    }
    opt.loadState(state, step);
  });
  agree(h, err, "checkpoint load from " + dir);
  if (!options.optimizerStates) {
    loadWeightsOnly(h, m, match, options.weightsDtype, "checkpoint load from " + dir);
    return out;
  }
  // The collective part runs only once every rank has read its files without error. The exact fp32
  // masters from the partitions define the model (the module file's weights may be rounded to 16 bits
  // and are only checked for names and shapes above).
  if (auto* z = zeroOf(h)) {
    err = attempt([&] { z->loadMasterPartition(master); });
    agree(h, err, "checkpoint load from " + dir);
  }
  return out;
}

}  // namespace dsrt::checkpoint
