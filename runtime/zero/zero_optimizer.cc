#include "runtime/zero/zero_optimizer.h"

#include "runtime/optim/flat_optimizer.h"
#include "runtime/zero/param_allgather.h"
#include "runtime/zero/reduce_bucket_plan.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <cmath>
#include <vector>

namespace dsrt::zero {

namespace {

std::vector<int64_t> numelsOf(const std::vector<at::Tensor>& params) {
  std::vector<int64_t> numels;
  numels.reserve(params.size());
  for (const auto& p : params) {
    numels.push_back(p.numel());
  }
  return numels;
}

}  // namespace

ZeroOptimizer::ZeroOptimizer(StrategyContext ctx)
    : ctx_(std::move(ctx)),
      plan_(planPartition(numelsOf(ctx_.params), ctx_.worldSize)),
      flatParams_(ctx_.params, plan_) {
  TORCH_CHECK(ctx_.pg && ctx_.pg->getSize() == ctx_.worldSize && ctx_.pg->getRank() == ctx_.rank,
              "zero: process group does not match rank ", ctx_.rank, " of ", ctx_.worldSize);
  TORCH_CHECK(ctx_.makeOptimizer, "zero: no optimizer factory");
  optimizer_ = ctx_.makeOptimizer(paramPartition());
  TORCH_CHECK(optimizer_ && optimizer_->numel() == plan_.partitionNumel, "zero: optimizer built for ",
              optimizer_ ? optimizer_->numel() : -1, " elements, the partition has '", plan_.partitionNumel, "'");
}

std::unique_ptr<BucketReducer> ZeroOptimizer::makeReducer(BucketIo io) const {
  auto mode = ctx_.reduceScatter ? ReduceMode::kReduceScatter : ReduceMode::kAllreduce;
  return std::make_unique<BucketReducer>(ctx_.pg, ctx_.rank, ctx_.worldSize,
                                         planReduceBuckets(plan_, ctx_.reduceBucketNumel),
                                         static_cast<int64_t>(ctx_.params.size()), mode, ctx_.overlapComm,
                                         std::move(io));
}

double ZeroOptimizer::gradNorm() {
  c10::AutoGradMode noGrad(false);
  // torch's cascade-summed fp32 norm per partition (no temporary the size of the partition), the
  // squares combined across ranks in double.
  const double local = at::norm(gradPartition()).item<double>();
  at::Tensor sq = at::full({1}, local * local, flatParams_.flat().options().dtype(at::kDouble));
  if (ctx_.worldSize > 1) {
    std::vector<at::Tensor> t{sq};
    ctx_.pg->allreduce(t)->wait();
  }
  return std::sqrt(sq.item<double>());
}

void ZeroOptimizer::step(double lr, double clipScale) {
  c10::AutoGradMode noGrad(false);
  at::Tensor grads = gradPartition();
  if (clipScale != 1.0) {
    grads.mul_(clipScale);
  }
  optimizer_->step(paramPartition(), grads, lr);
  allgatherPartitions(ctx_.pg, ctx_.rank, plan_, flatParams_.flat(), ctx_.allgatherBucketNumel);
}

std::vector<at::Tensor> ZeroOptimizer::fullParams() {
  std::vector<at::Tensor> out;
  for (const auto& p : flatParams_.params()) {
    out.push_back(p.detach().to(at::kFloat).clone());
  }
  return out;
}

void ZeroOptimizer::loadFullParams(const std::vector<at::Tensor>& full) {
  c10::AutoGradMode noGrad(false);
  const auto& params = flatParams_.params();
  TORCH_CHECK(full.size() == params.size(), "zero: loadFullParams got ", full.size(), " tensors for ",
              params.size(), " parameters");
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].detach().copy_(full[i].view(params[i].sizes()));
  }
}

void ZeroOptimizer::loadMasterPartition(const at::Tensor& fp32) {
  c10::AutoGradMode noGrad(false);
  TORCH_CHECK(fp32.numel() == plan_.partitionNumel, "zero: master partition of ", plan_.partitionNumel,
              " elements expected, got '", fp32.numel(), "'");
  paramPartition().copy_(fp32.reshape({-1}));
  allgatherPartitions(ctx_.pg, ctx_.rank, plan_, flatParams_.flat(), ctx_.allgatherBucketNumel);
}

int64_t ZeroOptimizer::modelStateBytes() const {
  return flatParams_.flat().nbytes() + gradientBytes() + optimizer_->stateBytes();
}

}  // namespace dsrt::zero
