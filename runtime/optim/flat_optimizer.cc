#include "runtime/optim/flat_optimizer.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <utility>

#include "runtime/compat/fused_adam_compat.h"
#include "runtime/optim/adagrad_flat_optimizer.h"
#include "runtime/optim/adam_flat_optimizer.h"
#include "runtime/optim/device_adam_flat_optimizer.h"
#include "runtime/optim/lion_flat_optimizer.h"
#include "runtime/optim/sgd_flat_optimizer.h"

namespace dsrt::optim {
namespace {

void checkSpec(const OptimizerSpec& s, int64_t numel) {
  TORCH_CHECK(numel >= 0, "optimizer: numel must be >= 0, got '", numel, "'");
  TORCH_CHECK(s.weightDecay >= 0.0, "optimizer: weight_decay must be >= 0, got '", s.weightDecay, "'");
  TORCH_CHECK(s.numThreads >= 0, "optimizer: thread count must be >= 0, got '", s.numThreads, "'");
  if (s.kind == OptimizerKind::kSgd) {
    TORCH_CHECK(s.momentum >= 0.0, "optimizer: SGD momentum must be >= 0, got '", s.momentum, "'");
    TORCH_CHECK(!s.nesterov || (s.momentum > 0.0 && s.dampening == 0.0),
                "optimizer: SGD nesterov needs momentum > 0 and dampening 0, got momentum '", s.momentum,
                "' dampening '", s.dampening, "'");
    return;
  }
  if (s.kind == OptimizerKind::kAdagrad) {
    TORCH_CHECK(s.eps >= 0.0, "optimizer: Adagrad eps must be >= 0, got '", s.eps, "'");
    TORCH_CHECK(s.lrDecay >= 0.0, "optimizer: Adagrad lr_decay must be >= 0, got '", s.lrDecay, "'");
    TORCH_CHECK(s.initialAccumulatorValue >= 0.0, "optimizer: Adagrad initial_accumulator_value must be >= 0, got '",
                s.initialAccumulatorValue, "'");
    return;
  }
  TORCH_CHECK(s.beta1 >= 0.0 && s.beta1 < 1.0, "optimizer: betas[0] must be in [0, 1), got '", s.beta1, "'");
  TORCH_CHECK(s.beta2 >= 0.0 && s.beta2 < 1.0, "optimizer: betas[1] must be in [0, 1), got '", s.beta2, "'");
  TORCH_CHECK(s.eps >= 0.0, "optimizer: eps must be >= 0, got '", s.eps, "'");
}

/// SGD, Lion and Adagrad are ATen element-wise operations: one class each for every device. Null for Adam.
std::unique_ptr<FlatOptimizer> makeElementwiseOptimizer(const OptimizerSpec& spec, int64_t numel, c10::Device device) {
  switch (spec.kind) {
    case OptimizerKind::kSgd:
      return std::make_unique<SgdFlatOptimizer>(spec, numel, device);
    case OptimizerKind::kLion:
      return std::make_unique<LionFlatOptimizer>(spec, numel, device);
    case OptimizerKind::kAdagrad:
      return std::make_unique<AdagradFlatOptimizer>(spec, numel, device);
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      break;
  }
  return nullptr;
}

}  // namespace

const char* kindName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kAdam:
      return "Adam";
    case OptimizerKind::kAdamW:
      return "AdamW";
    case OptimizerKind::kSgd:
      return "SGD";
    case OptimizerKind::kLion:
      return "Lion";
    case OptimizerKind::kAdagrad:
      return "Adagrad";
  }
  return "?";
}

FlatOptimizer::~FlatOptimizer() = default;

void FlatOptimizer::stepAndCopy(at::Tensor params, const at::Tensor& grads, double lr, at::Tensor lowPrecisionOut) {
  TORCH_CHECK(lowPrecisionOut.scalar_type() == at::kHalf || lowPrecisionOut.scalar_type() == at::kBFloat16,
              "optimizer: the low-precision copy must be Half or BFloat16, got '", lowPrecisionOut.scalar_type(),
              "'");
  checkOperand(lowPrecisionOut, lowPrecisionOut.scalar_type(), "low-precision copy");
  step(params, grads, lr);
  lowPrecisionOut.copy_(params);
}

void FlatOptimizer::stepInPieces(at::Tensor params, const at::Tensor& grads, double lr,
                                 const at::Tensor& lowPrecisionOut, const std::vector<int64_t>& pieceEnds,
                                 const PieceDone& pieceDone) {
  checkPieces(params, grads, lowPrecisionOut, pieceEnds);
  if (lowPrecisionOut.defined()) {
    stepAndCopy(params, grads, lr, lowPrecisionOut);
  } else {
    step(params, grads, lr);
  }
  if (pieceDone) {
    for (int64_t end : pieceEnds) {
      pieceDone(end);
    }
  }
}

void FlatOptimizer::checkPieces(const at::Tensor& params, const at::Tensor& grads, const at::Tensor& lowPrecisionOut,
                                const std::vector<int64_t>& pieceEnds) const {
  checkOperand(params, at::kFloat, "params");
  checkOperand(grads, at::kFloat, "grads");
  if (lowPrecisionOut.defined()) {
    TORCH_CHECK(lowPrecisionOut.scalar_type() == at::kHalf || lowPrecisionOut.scalar_type() == at::kBFloat16,
                "optimizer: the low-precision copy must be Half or BFloat16, got '", lowPrecisionOut.scalar_type(),
                "'");
    checkOperand(lowPrecisionOut, lowPrecisionOut.scalar_type(), "low-precision copy");
  }
  TORCH_CHECK(!pieceEnds.empty() && pieceEnds.back() == numel_, "optimizer: the last piece must end at ", numel_,
              ", got '", pieceEnds.empty() ? -1 : pieceEnds.back(), "'");
  int64_t begin = 0;
  for (int64_t end : pieceEnds) {
    TORCH_CHECK(end >= begin, "optimizer: piece ends must not decrease, got '", end, "' after ", begin);
    begin = end;
  }
}

void FlatOptimizer::setGroupRuns(std::vector<GroupRun> runs) {
  int64_t begin = 0;
  for (const GroupRun& run : runs) {
    TORCH_CHECK(run.end >= begin && run.group >= 0, "optimizer: group runs must not decrease and name groups >= 0, got '",
                run.end, "' for group ", run.group, " after ", begin);
    begin = run.end;
  }
  TORCH_CHECK(runs.empty() || begin == numel_, "optimizer: the last group run must end at ", numel_, ", got '", begin,
              "'");
  groupRuns_ = std::move(runs);
}

void FlatOptimizer::setGroupSettings(std::vector<GroupSettings> settings) {
  for (size_t g = 0; g < settings.size(); ++g) {
    const GroupSettings& s = settings[g];
    TORCH_CHECK(!s.lr || *s.lr >= 0.0, "optimizer: param group ", g, ": lr must be >= 0, got '", *s.lr, "'");
    TORCH_CHECK(!s.weightDecay || *s.weightDecay >= 0.0, "optimizer: param group ", g,
                ": weight_decay must be >= 0, got '", *s.weightDecay, "'");
    TORCH_CHECK(!s.beta1 || (*s.beta1 >= 0.0 && *s.beta1 < 1.0), "optimizer: param group ", g,
                ": betas[0] must be in [0, 1), got '", *s.beta1, "'");
    TORCH_CHECK(!s.beta2 || (*s.beta2 >= 0.0 && *s.beta2 < 1.0), "optimizer: param group ", g,
                ": betas[1] must be in [0, 1), got '", *s.beta2, "'");
    TORCH_CHECK(!s.eps || *s.eps >= 0.0, "optimizer: param group ", g, ": eps must be >= 0, got '", *s.eps, "'");
  }
  groupSettings_ = std::move(settings);
}

void FlatOptimizer::forEachGroupRange(int64_t begin, int64_t end, double lr, const GroupRangeFn& fn) const {
  if (groupRuns_.empty() || groupSettings_.empty()) {
    fn(begin, end, spec_, lr);
    return;
  }
  int64_t runBegin = 0;
  for (const GroupRun& run : groupRuns_) {
    const int64_t from = std::max(begin, runBegin);
    const int64_t to = std::min(end, run.end);
    runBegin = run.end;
    if (from >= to) {
      continue;
    }
    TORCH_CHECK(static_cast<size_t>(run.group) < groupSettings_.size(), "optimizer: param group ", run.group,
                " has no settings (", groupSettings_.size(), " groups set)");
    const GroupSettings& g = groupSettings_[static_cast<size_t>(run.group)];
    OptimizerSpec spec = spec_;
    spec.weightDecay = g.weightDecay.value_or(spec.weightDecay);
    spec.beta1 = g.beta1.value_or(spec.beta1);
    spec.beta2 = g.beta2.value_or(spec.beta2);
    spec.eps = g.eps.value_or(spec.eps);
    fn(from, to, spec, g.lr.value_or(lr));
  }
}

int64_t FlatOptimizer::stateBytes() const {
  int64_t bytes = 0;
  for (const auto& entry : state()) {
    bytes += entry.second.numel() * static_cast<int64_t>(entry.second.element_size());
  }
  return bytes;
}

void FlatOptimizer::checkOperand(const at::Tensor& t, c10::ScalarType dtype, const char* what) const {
  TORCH_CHECK(t.defined(), "optimizer: ", what, " is an undefined tensor");
  TORCH_CHECK(t.device() == device_, "optimizer: ", what, " must be on ", device_.is_cpu() ? "the CPU" : device_.str(),
              ", got '", t.device(), "'");
  TORCH_CHECK(t.scalar_type() == dtype, "optimizer: ", what, " must be ", dtype, ", got '", t.scalar_type(), "'");
  TORCH_CHECK(t.is_contiguous(), "optimizer: ", what, " must be contiguous");
  TORCH_CHECK(t.numel() == numel_, "optimizer: ", what, " must have ", numel_, " elements, got '", t.numel(), "'");
}

std::unique_ptr<FlatOptimizer> makeFlatOptimizer(const OptimizerSpec& spec, int64_t numel) {
  checkSpec(spec, numel);
  if (auto optimizer = makeElementwiseOptimizer(spec, numel, c10::Device(c10::kCPU))) {
    return optimizer;
  }
  return std::make_unique<AdamFlatOptimizer>(spec, numel);
}

std::unique_ptr<FlatOptimizer> makeFlatOptimizer(const OptimizerSpec& spec, int64_t numel, c10::Device device) {
  if (device.is_cpu() && !spec.deviceKernels) {
    return makeFlatOptimizer(spec, numel);
  }
  checkSpec(spec, numel);
  if (auto optimizer = makeElementwiseOptimizer(spec, numel, device)) {
    return optimizer;
  }
  return std::make_unique<DeviceAdamFlatOptimizer>(spec, numel, device, compat::hasFusedAdam(device.type()));
}

}  // namespace dsrt::optim
