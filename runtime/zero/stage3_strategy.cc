#include "runtime/zero/stage3_strategy.h"

#include "runtime/comms/pending_comm.h"
#include "runtime/optim/flat_optimizer.h"
#include "runtime/zero/partition_fragment.h"
#include "runtime/zero/partition_group_runs.h"
#include "runtime/zero/master_partition.h"
#include "runtime/zero/param_allgather.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <cmath>

namespace dsrt::zero {

namespace {

std::vector<int64_t> numelsOf(const std::vector<at::Tensor>& params) {
  std::vector<int64_t> numels;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto dtype = params[i].scalar_type();
    TORCH_CHECK(dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16, "zero stage 3: parameter ", i,
                " must be fp32, fp16 or bf16, got '", dtype, "'");
    TORCH_CHECK(params[i].options().type_equal(params.front().options()), "zero stage 3: parameter ", i,
                " differs in dtype or device from parameter 0, got '", params[i].options(), "'");
    numels.push_back(params[i].numel());
  }
  return numels;
}

Stage3ParamCoordinator::Settings settingsOf(const StrategyContext& ctx) {
  Stage3ParamCoordinator::Settings s;
  s.fetch.prefetchBucketNumel = ctx.stage3PrefetchBucketNumel;
  s.fetch.maxLiveNumel = ctx.stage3MaxLiveParameters;
  s.fetch.maxReuseDistance = ctx.stage3MaxReuseDistance;
  s.persistenceThreshold = ctx.stage3ParamPersistenceThreshold;
  s.modelPersistenceThreshold = ctx.stage3ModelPersistenceThreshold;
  TORCH_CHECK(s.fetch.prefetchBucketNumel >= 0 && s.fetch.maxLiveNumel >= 0 && s.fetch.maxReuseDistance >= 0,
              "zero_optimization.stage3_*: prefetch bucket, max live parameters and max reuse distance must be "
              ">= 0, got '", s.fetch.prefetchBucketNumel, ", ", s.fetch.maxLiveNumel, ", ",
              s.fetch.maxReuseDistance, "'");
  return s;
}

/// This rank's pieces of `full` (one tensor per parameter) copied into `partition`; padding zero.
void copyPartitionFrom(const PartitionPlan& plan, int rank, const std::vector<at::Tensor>& full,
                       at::Tensor& partition) {
  c10::AutoGradMode noGrad(false);
  partition.zero_();
  for (const ParamPiece& piece : plan.piecesOf(rank)) {
    at::Tensor src = full[static_cast<size_t>(piece.param)].detach().reshape({-1});
    partition.narrow(0, piece.flatOffset - plan.partitionBegin(rank), piece.numel)
        .copy_(src.narrow(0, piece.paramOffset, piece.numel));
  }
}

}  // namespace

Stage3Strategy::Stage3Strategy(StrategyContext ctx)
    : ctx_(std::move(ctx)), plan_(planPartition(numelsOf(ctx_.params), ctx_.worldSize)) {
  TORCH_CHECK(ctx_.pg && ctx_.pg->getSize() == ctx_.worldSize && ctx_.pg->getRank() == ctx_.rank,
              "zero stage 3: process group does not match rank ", ctx_.rank, " of ", ctx_.worldSize);
  TORCH_CHECK(!ctx_.params.empty(), "zero stage 3: no parameters to partition");
  TORCH_CHECK(ctx_.makeOptimizer, "zero stage 3: no optimizer factory");
  for (const auto& p : ctx_.params) {
    shapes_.push_back(p.sizes().vec());
  }
  const auto settings = settingsOf(ctx_);
  // offload_param alone (DeepSpeed allows it; OpenRLHF's configs use it with adam_offload off): on a CPU
  // model the partition already is host memory. On an accelerator the optimizer would have to run on the
  // device against a host partition, which libdsrt does not do: it says so instead of guessing.
  TORCH_CHECK(!ctx_.offloadParam || ctx_.offloadOptimizer || ctx_.params.front().device().is_cpu(),
              "zero_optimization.offload_param: on an accelerator libdsrt offloads the parameter partition together "
              "with the optimizer, add offload_optimizer: {device: cpu}, got 'offload_optimizer: none'");
  partition_ = at::empty({plan_.partitionNumel}, ctx_.params.front().options());
  if (ctx_.offloadParam) {
    auto host = partition_.options().device(at::kCPU);
    // Page-locked by offload_param.pin_memory, as DeepSpeed: only then do the uploads of a gather overlap.
    if (ctx_.paramPinMemory && at::hasCUDA()) {
      host = host.pinned_memory(true);
    }
    partition_ = at::empty({plan_.partitionNumel}, host);
  }
  copyPartitionFrom(plan_, ctx_.rank, ctx_.params, partition_);
  master_ = std::make_unique<MasterPartition>(partition_, ctx_.offloadOptimizer, ctx_.pinMemory);
  // Offload: averaged runs go straight into the host fp32 gradient partition (as at stage 2), so the
  // device keeps none; otherwise the gradient partition has the model's dtype.
  at::Tensor gradPartition =
      master_->offloaded() ? master_->hostGrad() : at::zeros({plan_.partitionNumel}, partition_.options());
  optimizer_ = ctx_.makeOptimizer(master_->master());
  TORCH_CHECK(optimizer_ && optimizer_->numel() == plan_.partitionNumel, "zero stage 3: optimizer built for ",
              optimizer_ ? optimizer_->numel() : -1, " elements, the partition has '", plan_.partitionNumel, "'");
  if (!ctx_.paramGroups.empty()) {
    optimizer_->setGroupRuns(partitionGroupRuns(plan_, ctx_.rank, ctx_.paramGroups));
  }
  grads_ = std::make_unique<PartitionGradReducer>(ctx_, plan_, gradPartition);  // hooks first: params still full
  coordinator_ = std::make_unique<Stage3ParamCoordinator>(ctx_, plan_, partition_, settings);
}

Stage3Strategy::~Stage3Strategy() = default;

void Stage3Strategy::beginBackward(bool /*isBoundary*/) {
  grads_->beginBackward();
}

void Stage3Strategy::endBackward(bool /*isBoundary*/) {
  grads_->endBackward();
  coordinator_->endMicroStep();
}

double Stage3Strategy::gradNorm() {
  c10::AutoGradMode noGrad(false);
  // 16-bit gradients are normed in fp32, or a loss-scaled fp16 norm would overflow.
  const at::Tensor& g = gradPartition();
  // The square stays on the gradients' device until the one host read after the allreduce.
  at::Tensor sq = at::norm(g.scalar_type() == at::kFloat ? g : g.to(at::kFloat)).to(at::kDouble).pow(2).reshape({1});
  if (ctx_.worldSize > 1) {
    std::vector<at::Tensor> t{sq};
    comms::PendingComm timing = comms::PendingComm::start(ctx_.commsLog, comms::kAllReduce, sq);
    ctx_.pg->allreduce(t)->wait();
    timing.waited();
  }
  return std::sqrt(sq.item<double>());
}

bool Stage3Strategy::hasOverflow() {
  c10::AutoGradMode noGrad(false);
  return !at::isfinite(gradPartition()).all().item<bool>();
}

void Stage3Strategy::step(double lr, double clipScale) {
  coordinator_->releaseAll();  // nothing gathered may outlive the update it would contradict
  coordinator_->awaitPartitionReads();  // offload_param: the CPU optimizer rewrites the host partition
  {
    // Aliased (fp32, no offload): the optimizer steps the partition itself. Offloaded: the gradient goes
    // to host memory, the optimizer steps the host master, the partition receives the result.
    EngineTimers::MaybeScope timed(ctx_.timers, EngineTimers::kOptimizerStep);
    master_->step(*optimizer_, gradPartition(), clipScale, lr);
  }
  EngineTimers::MaybeScope timed(ctx_.timers, EngineTimers::kAllgather);
  coordinator_->refreshPersistent();
}

void Stage3Strategy::zeroGrad() {
  grads_->zeroGrad();
}

int64_t Stage3Strategy::modelStateBytes() const {
  // With offload the gradient partition, the master and the optimizer state are host memory
  // (offloadedStateBytes); otherwise a 16-bit model adds its fp32 master (deviceBytes).
  if (master_->offloaded()) {
    const int64_t partition = ctx_.offloadParam ? 0 : static_cast<int64_t>(partition_.nbytes());
    return partition + coordinator_->persistentBytes();
  }
  const int64_t partition = ctx_.offloadParam ? 0 : static_cast<int64_t>(partition_.nbytes());
  return partition + static_cast<int64_t>(gradPartition().nbytes()) + optimizer_->stateBytes() +
         master_->deviceBytes() + coordinator_->persistentBytes();
}

int64_t Stage3Strategy::offloadedStateBytes() const {
  const int64_t partition = ctx_.offloadParam ? static_cast<int64_t>(partition_.nbytes()) : 0;
  return partition + (master_->offloaded() ? master_->hostBytes() + optimizer_->stateBytes() : 0);
}

at::Tensor Stage3Strategy::masterPartition() const {
  return master_->master();
}

std::vector<at::Tensor> Stage3Strategy::fullParams() {
  c10::AutoGradMode noGrad(false);
  // The fp32 masters, gathered on the model's device (the collective's).
  at::Tensor flat = at::zeros({plan_.paddedNumel}, ctx_.params.front().options().dtype(at::kFloat));
  flat.narrow(0, plan_.partitionBegin(ctx_.rank), plan_.partitionNumel).copy_(master_->master());
  allgatherPartitions(ctx_.pg, ctx_.rank, plan_, flat, ctx_.allgatherBucketNumel, ctx_.commsLog);
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < ctx_.params.size(); ++i) {
    out.push_back(flat.narrow(0, plan_.paramOffsets[i], plan_.paramNumels[i]).view(shapes_[i]).clone());
  }
  return out;
}

void Stage3Strategy::loadFullParams(const std::vector<at::Tensor>& full) {
  TORCH_CHECK(full.size() == ctx_.params.size(), "zero stage 3: loadFullParams got ", full.size(), " tensors for ",
              ctx_.params.size(), " parameters");
  for (size_t i = 0; i < full.size(); ++i) {
    TORCH_CHECK(full[i].numel() == plan_.paramNumels[i], "zero stage 3: loadFullParams: parameter ", i, " has ",
                plan_.paramNumels[i], " elements, got '", full[i].numel(), "'");
  }
  coordinator_->releaseAll();
  coordinator_->awaitPartitionReads();
  std::vector<at::Tensor> fp32;
  for (const auto& t : full) {
    fp32.push_back(t.detach().to(at::kFloat));
  }
  at::Tensor part = at::empty({plan_.partitionNumel}, master_->master().options());
  copyPartitionFrom(plan_, ctx_.rank, fp32, part);
  master_->load(part);  // the fp32 values into the master, rounded into a 16-bit partition
  coordinator_->refreshPersistent();
}

void Stage3Strategy::loadMasterPartition(const at::Tensor& fp32) {
  c10::AutoGradMode noGrad(false);
  TORCH_CHECK(fp32.numel() == plan_.partitionNumel, "zero stage 3: master partition of ", plan_.partitionNumel,
              " elements expected, got '", fp32.numel(), "'");
  coordinator_->releaseAll();
  coordinator_->awaitPartitionReads();
  master_->load(fp32);
  coordinator_->refreshPersistent();
}

ParamFragment Stage3Strategy::fragment(int64_t param) const {
  TORCH_CHECK(param >= 0 && param < static_cast<int64_t>(shapes_.size()), "zero stage 3: parameter index ", param,
              " is outside the ", shapes_.size(), " parameters the engine trains");
  return partitionFragment(plan_, ctx_.rank, param, shapes_[static_cast<size_t>(param)],
                           {masterPartition(), partition_, gradPartition()});
}

}  // namespace dsrt::zero
