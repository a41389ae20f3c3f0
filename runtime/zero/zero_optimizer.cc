#include "runtime/zero/zero_optimizer.h"

#include "runtime/comms/pending_comm.h"
#include "runtime/optim/flat_optimizer.h"
#include "runtime/zero/partition_fragment.h"
#include "runtime/zero/partition_group_runs.h"
#include "runtime/zero/param_allgather.h"
#include "runtime/zero/reduce_bucket_plan.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <algorithm>
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

// The optimizer's pieces for all-gather shards ending at `shardEnds`: each shard end rounded up to
// FlatOptimizer::kPieceAlign (so the pieced update equals one whole update bit for bit), the last the
// partition's end; a shard is posted once the piece covering it is done.
std::vector<int64_t> optimizerPieces(const std::vector<int64_t>& shardEnds) {
  constexpr int64_t align = optim::FlatOptimizer::kPieceAlign;
  std::vector<int64_t> ends;
  const int64_t numel = shardEnds.back();
  for (int64_t end : shardEnds) {
    const int64_t aligned = std::min(numel, (end + align - 1) / align * align);
    if (ends.empty() || aligned > ends.back()) {
      ends.push_back(aligned);
    }
  }
  return ends;
}

}  // namespace

ZeroOptimizer::ZeroOptimizer(StrategyContext ctx)
    : ctx_(std::move(ctx)),
      plan_(planPartition(numelsOf(ctx_.params), ctx_.worldSize)),
      flatParams_(ctx_.params, plan_),
      master_(flatParams_.partition(ctx_.rank), ctx_.offloadOptimizer, ctx_.pinMemory) {
  TORCH_CHECK(ctx_.pg && ctx_.pg->getSize() == ctx_.worldSize && ctx_.pg->getRank() == ctx_.rank,
              "zero: process group does not match rank ", ctx_.rank, " of ", ctx_.worldSize);
  TORCH_CHECK(ctx_.makeOptimizer, "zero: no optimizer factory");
  optimizer_ = ctx_.makeOptimizer(master_.master());
  TORCH_CHECK(optimizer_ && optimizer_->numel() == plan_.partitionNumel, "zero: optimizer built for ",
              optimizer_ ? optimizer_->numel() : -1, " elements, the partition has '", plan_.partitionNumel, "'");
  if (!ctx_.paramGroups.empty()) {
    optimizer_->setGroupRuns(partitionGroupRuns(plan_, ctx_.rank, ctx_.paramGroups));
  }
  if (ctx_.trackUnusedParameters) {
    // Its own hooks, beside the stage's: they only note that autograd produced a gradient for the parameter.
    gotGradient_.assign(ctx_.params.size(), 0);
    gradientSeen_ = std::make_unique<GradReadyHooks>(ctx_.params, [this](int64_t i) {
      gotGradient_[static_cast<size_t>(i)] = 1;
    });
  }
}

std::vector<int64_t> ZeroOptimizer::unusedParameters() const {
  std::vector<int64_t> unused;
  if (gotGradient_.empty()) {
    return unused;
  }
  for (const ParamPiece& piece : plan_.piecesOf(ctx_.rank)) {
    const auto i = static_cast<size_t>(piece.param);
    if (!gotGradient_[i] && (unused.empty() || unused.back() != piece.param)) {
      unused.push_back(piece.param);
    }
  }
  return unused;
}

std::unique_ptr<BucketReducer> ZeroOptimizer::makeReducer(BucketIo io) const {
  auto mode = ctx_.reduceScatter ? ReduceMode::kReduceScatter : ReduceMode::kAllreduce;
  auto reducer = std::make_unique<BucketReducer>(ctx_.pg, ctx_.rank, ctx_.worldSize,
                                                 planReduceBuckets(plan_, ctx_.reduceBucketNumel),
                                                 static_cast<int64_t>(ctx_.params.size()), mode, ctx_.overlapComm,
                                                 std::move(io));
  if (ctx_.commDtype) {
    reducer->setCommDtype(*ctx_.commDtype);
  }
  reducer->setTimers(ctx_.timers);
  reducer->setCommsLog(ctx_.commsLog);
  return reducer;
}

double ZeroOptimizer::gradNorm() {
  c10::AutoGradMode noGrad(false);
  // torch's cascade-summed fp32 norm per partition (no temporary the size of the partition), the
  // squares combined across ranks in double.
  // 16-bit gradients are normed in fp32 (DeepSpeed: in double), or a scaled fp16 norm would overflow.
  const at::Tensor g = gradPartition();
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

void ZeroOptimizer::step(double lr, double clipScale) {
  c10::AutoGradMode noGrad(false);
  // A new window for unusedParameters() (after the engine looked; an fp16-skipped step keeps the old one's).
  std::fill(gotGradient_.begin(), gotGradient_.end(), 0);
  ShardedAllgather gather(ctx_.pg, ctx_.rank, plan_, allgatherView(), ctx_.allgatherBucketNumel);
  gather.setCommsLog(ctx_.commsLog);
  {
    // clipScale is the engine's combined factor: 1/loss_scale and the clipping coefficient together
    // (DeepSpeed's unscale_and_clip_grads), applied to the fp32 gradient before the update.
    EngineTimers::MaybeScope timed(ctx_.timers, EngineTimers::kOptimizerStep);
    if (gather.shardEnds().size() > 1) {
      // Each all-gather shard leaves as soon as the optimizer has finished it, while the next is computed:
      // no extra buffer and the same values, so this does not wait for overlap_comm (which DeepSpeed
      // defines as overlapping the gradient reduction with backward, and defaults off).
      master_.step(*optimizer_, gradPartition(), clipScale, lr, optimizerPieces(gather.shardEnds()),
                   [&gather](int64_t end) { gather.postUpTo(end); });
    } else {
      master_.step(*optimizer_, gradPartition(), clipScale, lr);
    }
  }
  EngineTimers::MaybeScope timed(ctx_.timers, EngineTimers::kAllgather);
  gather.wait();
}

std::vector<at::Tensor> ZeroOptimizer::fullParams() {
  std::vector<at::Tensor> out;
  if (master_.aliased()) {
    for (const auto& p : flatParams_.params()) {
      out.push_back(p.detach().to(at::kFloat).clone());
    }
    return out;
  }
  c10::AutoGradMode noGrad(false);
  // On the model's device, where the process group's collectives run (NCCL: device tensors only).
  at::Tensor flat = at::zeros({plan_.paddedNumel}, flatParams_.flat().options().dtype(at::kFloat));
  flat.narrow(0, plan_.partitionBegin(ctx_.rank), plan_.partitionNumel).copy_(master_.master());
  allgatherPartitions(ctx_.pg, ctx_.rank, plan_, flat, ctx_.allgatherBucketNumel, ctx_.commsLog);
  const auto& params = flatParams_.params();
  for (size_t i = 0; i < params.size(); ++i) {
    out.push_back(flat.narrow(0, plan_.paramOffsets[i], plan_.paramNumels[i]).view(params[i].sizes()).clone());
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
  if (master_.aliased()) {
    return;
  }
  // The masters come from the full-precision values, not from the (possibly 16-bit) model.
  at::Tensor master = at::zeros({plan_.partitionNumel}, at::TensorOptions().dtype(at::kFloat));
  const int64_t begin = plan_.partitionBegin(ctx_.rank);
  for (const ParamPiece& piece : plan_.piecesOf(ctx_.rank)) {
    const at::Tensor& src = full[static_cast<size_t>(piece.param)];
    master.narrow(0, piece.flatOffset - begin, piece.numel)
        .copy_(src.reshape({-1}).narrow(0, piece.paramOffset, piece.numel));
  }
  master_.load(master);
}

void ZeroOptimizer::loadMasterPartition(const at::Tensor& fp32) {
  c10::AutoGradMode noGrad(false);
  TORCH_CHECK(fp32.numel() == plan_.partitionNumel, "zero: master partition of ", plan_.partitionNumel,
              " elements expected, got '", fp32.numel(), "'");
  master_.load(fp32);
  allgatherModel();
}

int64_t ZeroOptimizer::modelStateBytes() const {
  const int64_t optimizerOnDevice = master_.offloaded() ? 0 : optimizer_->stateBytes();
  return static_cast<int64_t>(flatParams_.flat().nbytes()) + gradientBytes() + master_.deviceBytes() +
         optimizerOnDevice;
}

int64_t ZeroOptimizer::offloadedStateBytes() const {
  return master_.offloaded() ? master_.hostBytes() + optimizer_->stateBytes() : 0;
}

at::Tensor ZeroOptimizer::allgatherView() const {
  const at::Tensor& flat = flatParams_.flat();
  // An all-gather only copies bits: bf16 travels as 16-bit half payloads, since Gloo has no bfloat16.
  return flat.scalar_type() == at::kBFloat16 ? flat.view(at::kHalf) : flat;
}

void ZeroOptimizer::allgatherModel() {
  allgatherPartitions(ctx_.pg, ctx_.rank, plan_, allgatherView(), ctx_.allgatherBucketNumel, ctx_.commsLog);
}

bool ZeroOptimizer::hasOverflow() {
  c10::AutoGradMode noGrad(false);
  return !at::isfinite(gradPartition()).all().item<bool>();
}

ParamFragment ZeroOptimizer::fragment(int64_t param) const {
  TORCH_CHECK(param >= 0 && param < static_cast<int64_t>(ctx_.params.size()), "zero: parameter index ", param,
              " is outside the ", ctx_.params.size(), " parameters the engine trains");
  return partitionFragment(plan_, ctx_.rank, param, ctx_.params[static_cast<size_t>(param)].sizes().vec(),
                           {masterPartition(), paramPartition(), gradPartition()});
}

}  // namespace dsrt::zero
