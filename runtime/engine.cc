#include "runtime/engine.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <cstdio>
#include <sstream>

#include "runtime/config/lr_schedule.h"
#include "runtime/optim/flat_optimizer.h"

namespace dsrt {
namespace {

optim::OptimizerSpec specFor(const config::OptimizerConfig& c) {
  optim::OptimizerSpec s;
  switch (c.type) {
    case config::OptimizerType::Adam:
      s.kind = optim::OptimizerKind::kAdam;
      break;
    case config::OptimizerType::AdamW:
      s.kind = optim::OptimizerKind::kAdamW;
      break;
    case config::OptimizerType::SGD:
      s.kind = optim::OptimizerKind::kSgd;
      break;
  }
  s.beta1 = c.betas[0];
  s.beta2 = c.betas[1];
  s.eps = c.eps;
  s.weightDecay = c.weightDecay;
  // The config resolves DeepSpeed's effective_adam_w_mode: "Adam" decays like AdamW unless adam_w_mode=false.
  s.adamWMode = c.adamWMode;
  s.biasCorrection = c.biasCorrection;
  s.momentum = c.momentum;
  s.dampening = c.dampening;
  s.nesterov = c.nesterov;
  return s;
}

StrategyContext contextFor(std::vector<at::Tensor> params, const config::DeepSpeedConfig& cfg, const DistContext& dist) {
  TORCH_CHECK(cfg.optimizer.has_value(), cfg.source,
              ": optimizer: libdsrt needs an 'optimizer' block (Adam, AdamW or SGD): the engine owns the optimizer");
  TORCH_CHECK(!cfg.fp16.enabled && !cfg.bf16.enabled, cfg.source,
              ": fp16/bf16: mixed precision is parsed but not implemented yet in libdsrt, got enabled=true");
  TORCH_CHECK(!cfg.zero.offloadOptimizer.enabled() && !cfg.zero.offloadParam.enabled(), cfg.source,
              ": zero_optimization.offload_*: offload is not implemented in libdsrt yet, got device 'cpu'");
  StrategyContext ctx;
  for (auto& p : params) {
    if (p.requires_grad()) {
      ctx.params.push_back(p);
    }
  }
  TORCH_CHECK(!ctx.params.empty(), "dsrt::initialize: the model has no parameter that requires grad");
  ctx.pg = dist.pg;
  ctx.rank = dist.env.rank;
  ctx.worldSize = dist.env.worldSize;
  ctx.reduceBucketNumel = cfg.zero.reduceBucketSize;
  ctx.allgatherBucketNumel = cfg.zero.allgatherBucketSize;
  // Stage 0 is the overlapped DDP of PyTorch (allreduce launched from autograd hooks) unless the user
  // turned overlap_comm off explicitly; ZeRO stages follow DeepSpeed's overlap_comm default (false).
  ctx.overlapComm = cfg.zero.stage == 0 ? (!cfg.zero.overlapCommExplicit || cfg.zero.overlapComm) : cfg.zero.overlapComm;
  ctx.reduceScatter = cfg.zero.reduceScatter;
  ctx.contiguousGradients = cfg.zero.contiguousGradients;
  ctx.stage3PrefetchBucketNumel = cfg.zero.prefetchBucketSize;
  ctx.stage3ParamPersistenceThreshold = cfg.zero.paramPersistenceThreshold;
  ctx.stage3MaxLiveParameters = cfg.zero.maxLiveParameters;
  ctx.stage3MaxReuseDistance = cfg.zero.maxReuseDistance;
  const optim::OptimizerSpec spec = specFor(*cfg.optimizer);
  ctx.makeOptimizer = [spec](at::Tensor flatParams) { return optim::makeFlatOptimizer(spec, flatParams.numel()); };
  return ctx;
}

// DeepSpeed's _broadcast_model / DDP's initial sync: every rank starts from rank 0's parameters, so a
// program that forgot to seed its model identically still trains one model.
void broadcastFromRankZero(const std::vector<at::Tensor>& params, c10d::ProcessGroup& pg) {
  if (pg.getSize() == 1 || params.empty()) {
    return;
  }
  at::NoGradGuard noGrad;
  std::vector<at::Tensor> flat;
  for (const auto& p : params) {
    flat.push_back(p.detach().reshape({-1}));
  }
  std::vector<at::Tensor> buffer{at::cat(flat)};
  pg.broadcast(buffer)->wait();
  int64_t offset = 0;
  for (const auto& p : params) {
    p.detach().copy_(buffer[0].narrow(0, offset, p.numel()).view(p.sizes()));
    offset += p.numel();
  }
}

}  // namespace

Engine::Engine(std::vector<at::Tensor> params, config::DeepSpeedConfig config, std::shared_ptr<DistContext> dist)
    : config_(std::move(config)), dist_(std::move(dist)) {
  TORCH_CHECK(dist_ && dist_->pg, "dsrt::Engine: no process group (call dsrt::init_distributed first)");
  TORCH_CHECK(config_.worldSize == dist_->env.worldSize, "dsrt::Engine: the config was resolved for world size ",
              config_.worldSize, " but the process group has ", dist_->env.worldSize, " ranks");
  StrategyContext ctx = contextFor(std::move(params), config_, *dist_);
  broadcastFromRankZero(ctx.params, *dist_->pg);
  params_ = ctx.params;
  for (const auto& p : params_) {
    paramShapes_.push_back(p.sizes().vec());
  }
  strategy_ = makeGradStrategy(config_.zero.stage, std::move(ctx));
  strategy_->zeroGrad();
  applyScheduledMomentum();
  lastPrint_ = std::chrono::steady_clock::now();
}

Engine::~Engine() = default;

bool Engine::is_gradient_accumulation_boundary() const {
  return (microSteps_ + 1) % config_.batch.gradientAccumulationSteps == 0;
}

double Engine::get_lr() const {
  if (config_.scheduler) {
    return config::learningRate(*config_.scheduler, lastBatchIteration_);
  }
  return config_.optimizer->lr;
}

void Engine::backward(const at::Tensor& loss) {
  TORCH_CHECK(loss.defined() && loss.numel() == 1, "engine.backward: loss must be a scalar tensor, got ",
              loss.defined() ? loss.sizes() : at::IntArrayRef{});
  TORCH_CHECK(loss.requires_grad(), "engine.backward: loss does not require grad (was it computed under NoGradGuard?)");
  TORCH_CHECK(!backwardDone_, "engine.backward: called twice in one micro-step; call engine.step() after each backward");
  const bool boundary = is_gradient_accumulation_boundary();
  {
    auto scope = timers_.scope(EngineTimers::kBackward);
    strategy_->beginBackward(boundary);
    const auto gas = config_.batch.gradientAccumulationSteps;
    (gas > 1 ? loss / static_cast<double>(gas) : loss).backward();
  }
  {
    auto scope = timers_.scope(EngineTimers::kAllreduce);
    strategy_->endBackward(boundary);
  }
  backwardDone_ = true;
}

void Engine::step() {
  TORCH_CHECK(backwardDone_, "engine.step: no engine.backward(loss) since the last step");
  backwardDone_ = false;
  if (is_gradient_accumulation_boundary()) {
    {
      auto scope = timers_.scope(EngineTimers::kStep);
      double clipScale = 1.0;
      if (config_.gradientClipping > 0.0) {
        // DeepSpeed's clip_grad_norm_: scale by max_norm / (norm + 1e-6) when that is below 1.
        lastGradNorm_ = strategy_->gradNorm();
        const double coef = config_.gradientClipping / (lastGradNorm_ + 1e-6);
        if (coef < 1.0) {
          clipScale = coef;
        }
      }
      strategy_->step(get_lr(), clipScale);
      strategy_->zeroGrad();
      ++lastBatchIteration_;
      applyScheduledMomentum();
    }
    ++globalSteps_;
    globalSamples_ += config_.batch.trainBatchSize;
    if (config_.stepsPerPrint && *config_.stepsPerPrint > 0 && globalSteps_ % *config_.stepsPerPrint == 0) {
      logProgress();
    }
  }
  ++microSteps_;
}

void Engine::zero_grad() { strategy_->zeroGrad(); }

void Engine::applyScheduledMomentum() {
  if (!config_.scheduler) {
    return;
  }
  const bool hasBetas = config_.optimizer->type != config::OptimizerType::SGD;
  if (auto betas = config::oneCycleBetas(*config_.scheduler, lastBatchIteration_, hasBetas)) {
    strategy_->optimizer().setBetas((*betas)[0], (*betas)[1]);
  }
}

void Engine::logProgress() {
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - lastPrint_).count();
  const double samplesPerSec = seconds > 0 ? static_cast<double>(globalSamples_ - samplesAtLastPrint_) / seconds : 0.0;
  const int64_t steps = *config_.stepsPerPrint;
  if (rank() == 0) {
    std::ostringstream line;
    line << "[dsrt rank 0] step=" << globalSteps_ << ", skipped=0, lr=[" << get_lr() << "], samples/s=" << samplesPerSec;
    if (lastGradNorm_ >= 0) {
      line << ", grad_norm=" << lastGradNorm_;
    }
    if (config_.wallClockBreakdown) {
      line << "\n[dsrt rank 0] time (ms) | " << timers_.format(steps);
    }
    std::printf("%s\n", line.str().c_str());
    std::fflush(stdout);
  }
  timers_.reset();
  lastPrint_ = now;
  samplesAtLastPrint_ = globalSamples_;
}

}  // namespace dsrt
