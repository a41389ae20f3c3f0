#include "runtime/engine.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>

#include "runtime/assertion_failure.h"
#include "runtime/backend_device_check.h"
#include "runtime/comms/pending_comm.h"
#include "runtime/config/config_warnings.h"
#include "runtime/config/lr_schedule.h"
#include "runtime/malloc_tuning.h"
#include "runtime/optim/flat_optimizer.h"
#include "runtime/precision/half_kernels.h"
#include "runtime/precision/precision_plan.h"

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
    case config::OptimizerType::Lion:
      s.kind = optim::OptimizerKind::kLion;
      break;
    case config::OptimizerType::Adagrad:
      s.kind = optim::OptimizerKind::kAdagrad;
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
  s.lrDecay = c.lrDecay;
  s.initialAccumulatorValue = c.initialAccumulatorValue;
  // DSRT_DEVICE_OPTIMIZER=1 runs the GPU path's optimizer (ATen kernels) on CPU tensors, for CI.
  const char* device = std::getenv("DSRT_DEVICE_OPTIMIZER");
  s.deviceKernels = device != nullptr && std::string(device) == "1";
  return s;
}

StrategyContext contextFor(std::vector<at::Tensor> params, const config::DeepSpeedConfig& cfg, const DistContext& dist) {
  TORCH_CHECK(cfg.optimizer.has_value(), cfg.source,
              ": optimizer: libdsrt needs an 'optimizer' block (Adam, AdamW, SGD, Lion or Adagrad): the engine owns the optimizer");
  // DeepSpeed has no stage-0 offload (its CPU Adam then refuses the device parameters at the first step).
  TORCH_CHECK(!cfg.zero.offloadOptimizer.enabled() || cfg.zero.stage >= 1, cfg.source,
              ": zero_optimization.offload_optimizer: ZeRO-Offload needs zero_optimization.stage 1, 2 or 3, got '",
              cfg.zero.stage, "'");
  StrategyContext ctx;
  for (auto& p : params) {
    if (p.requires_grad()) {
      ctx.params.push_back(p);
    }
  }
  TORCH_CHECK(!ctx.params.empty(), "dsrt::initialize: the model has no parameter that requires grad");
  ctx.pg = dist.pg;
  ctx.commsLog = dist.commsLog;
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
  ctx.stage3ModelPersistenceThreshold = cfg.zero.modelPersistenceThreshold;
  ctx.stage3MaxLiveParameters = cfg.zero.maxLiveParameters;
  ctx.stage3MaxReuseDistance = cfg.zero.maxReuseDistance;
  // offload_param is a stage-3 option: the config warns that other stages ignore it, and they do.
  ctx.offloadParam = cfg.zero.stage == 3 && cfg.zero.offloadParam.device == config::OffloadDevice::Cpu;
  ctx.commDtype = precision::planPrecision(cfg).commDtype;
  if (ctx.commDtype == at::kBFloat16 && dist.backend == "gloo") {
    // torch 1.13's Gloo has no bfloat16 reductions ("Invalid scalar type"); NCCL has. Said once, by rank 0,
    // as the config's other warnings are (TORCH_WARN would go through glog, uninitialised in most programs).
    if (dist.env.rank == 0) {
      config::warnOnce(cfg.source + ": communication_data_type: Gloo cannot reduce bfloat16, so libdsrt "
                       "reduces bf16 gradients as fp32 on Gloo (NCCL reduces them in bf16)");
    }
    ctx.commDtype = at::kFloat;
  }
  ctx.offloadOptimizer = cfg.zero.offloadOptimizer.device == config::OffloadDevice::Cpu;
  ctx.pinMemory = cfg.zero.offloadOptimizer.pinMemory;
  ctx.trackUnusedParameters = ctx.offloadOptimizer && !cfg.zero.ignoreUnusedParameters &&
                              (cfg.zero.stage == 1 || cfg.zero.stage == 2);
  ctx.paramPinMemory = cfg.zero.offloadParam.pinMemory;
  optim::OptimizerSpec spec = specFor(*cfg.optimizer);
  if (cfg.optimizer->type == config::OptimizerType::Adagrad && ctx.offloadOptimizer) {
    // DeepSpeed runs DeepSpeedCPUAdagrad under offload: its rule, and it takes neither torch-only setting.
    TORCH_CHECK(spec.lrDecay == 0.0 && spec.initialAccumulatorValue == 0.0, cfg.source,
                ": optimizer.params: lr_decay and initial_accumulator_value are torch.optim.Adagrad's; with "
                "offload_optimizer DeepSpeed runs DeepSpeedCPUAdagrad, which takes neither, got lr_decay '",
                spec.lrDecay, "' initial_accumulator_value '", spec.initialAccumulatorValue, "'");
    spec.adagradRawGradStep = true;
  }
  // The optimizer lives where the strategy keeps the fp32 masters: the CPU for offload and CPU models, the
  // parameters' device otherwise.
  ctx.makeOptimizer = [spec](at::Tensor flatParams) {
    return optim::makeFlatOptimizer(spec, flatParams.numel(), flatParams.device());
  };
  return ctx;
}

// DeepSpeed's _broadcast_model / DDP's initial sync: every rank starts from rank 0's parameters, so a
// program that forgot to seed its model identically still trains one model. Parameters travel in
// buckets of at most kBroadcastBucketNumel elements (a lone larger parameter alone, in place), so the
// transient copy stays small: one flat copy of the whole model would be the peak of ZeRO-3's memory.
constexpr int64_t kBroadcastBucketNumel = int64_t{1} << 22;

void broadcastBucket(const std::vector<at::Tensor>& params, size_t begin, size_t end, c10d::ProcessGroup& pg,
                     const std::shared_ptr<comms::CommsLog>& commsLog) {
  if (end - begin == 1 && params[begin].is_contiguous()) {
    std::vector<at::Tensor> one{params[begin].detach()};
    comms::PendingComm timing = comms::PendingComm::start(commsLog, comms::kBroadcast, one[0]);
    pg.broadcast(one)->wait();
    timing.waited();
    return;
  }
  std::vector<at::Tensor> flat;
  for (size_t i = begin; i < end; ++i) {
    flat.push_back(params[i].detach().reshape({-1}));
  }
  std::vector<at::Tensor> buffer{at::cat(flat)};
  comms::PendingComm timing = comms::PendingComm::start(commsLog, comms::kBroadcast, buffer[0]);
  pg.broadcast(buffer)->wait();
  timing.waited();
  int64_t offset = 0;
  for (size_t i = begin; i < end; ++i) {
    params[i].detach().copy_(buffer[0].narrow(0, offset, params[i].numel()).view(params[i].sizes()));
    offset += params[i].numel();
  }
}

void broadcastFromRankZero(const std::vector<at::Tensor>& params, c10d::ProcessGroup& pg,
                           const std::shared_ptr<comms::CommsLog>& commsLog) {
  if (pg.getSize() == 1 || params.empty()) {
    return;
  }
  at::NoGradGuard noGrad;
  size_t begin = 0;
  int64_t numel = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    if (i > begin && numel + params[i].numel() > kBroadcastBucketNumel) {
      broadcastBucket(params, begin, i, pg, commsLog);
      begin = i;
      numel = 0;
    }
    numel += params[i].numel();
  }
  broadcastBucket(params, begin, params.size(), pg, commsLog);
}

// DeepSpeed's module.half() / module.bfloat16(): every floating parameter takes the model dtype. set_data
// keeps the tensor objects (and autograd identity) the model holds.
void convertParams(std::vector<at::Tensor>& params, c10::ScalarType dtype) {
  at::NoGradGuard noGrad;
  for (auto& p : params) {
    if (p.is_floating_point() && p.scalar_type() != dtype) {
      p.set_data(p.detach().to(dtype));
    }
  }
}

}  // namespace

Engine::Engine(std::vector<at::Tensor> params, config::DeepSpeedConfig config, std::shared_ptr<DistContext> dist,
               std::vector<int> paramGroups, bool modelAvoidsHalfKernels, OptimizerFactory clientOptimizer)
    : config_(std::move(config)), dist_(std::move(dist)) {
  tuneMallocForTraining();  // before the first step's allocations (malloc_tuning.h)
  TORCH_CHECK(dist_ && dist_->pg, "dsrt::Engine: no process group (call dsrt::init_distributed first)");
  TORCH_CHECK(config_.worldSize == dist_->env.worldSize, "dsrt::Engine: the config was resolved for world size ",
              config_.worldSize, " but the process group has ", dist_->env.worldSize, " ranks");
  precision_ = precision::planPrecision(config_);
  scaler_ = std::make_unique<precision::LossScaler>(precision_.scaler);
  for (const auto& p : params) {
    if (auto refusal = backendDeviceRefusal(dist_->pg->getBackendName(), p.device())) {
      TORCH_CHECK(false, *refusal);
    }
  }
  // Every rank probes the same torch, so every rank refuses here, before the first collective: a fp16
  // model on such a CPU would otherwise fail inside its first forward, in torch's words.
  if (precision_.modelDtype == at::kHalf && !modelAvoidsHalfKernels && !params.empty()) {
    const c10::Device device = params.front().device();
    if (std::optional<std::string> missing = precision::missingHalfMatmul(device)) {
      TORCH_CHECK(false, precision::fp16Refusal(config_.source, device, *missing));
    }
  }
  std::vector<at::Tensor> all = params;
  StrategyContext ctx = contextFor(std::move(params), config_, *dist_);
  ctx.timers = &timers_;
  if (clientOptimizer) {
    ctx.makeOptimizer = std::move(clientOptimizer);
  }
  TORCH_CHECK(paramGroups.empty() || paramGroups.size() == ctx.params.size(), "dsrt::Engine: ", paramGroups.size(),
              " param group indices for ", ctx.params.size(), " parameters");
  ctx.paramGroups = std::move(paramGroups);
  // Broadcast before converting: Gloo cannot broadcast bfloat16, and rounding rank 0's fp32 values
  // gives what DeepSpeed's broadcast of the already-converted module gives.
  broadcastFromRankZero(ctx.params, *dist_->pg, dist_->commsLog);
  convertParams(all, precision_.modelDtype);
  params_ = ctx.params;
  for (const auto& p : params_) {
    paramShapes_.push_back(p.sizes().vec());
  }
  strategy_ = makeGradStrategy(config_.zero.stage, std::move(ctx));
  live().zeroGrad();
  applyScheduledMomentum();
  lastPrint_ = std::chrono::steady_clock::now();
}

Engine::~Engine() = default;

void Engine::checkEveryParameterGotAGradient() const {
  const std::vector<int64_t> unused = live().unusedParameters();
  if (unused.empty()) {
    return;
  }
  std::string names;
  for (size_t k = 0; k < unused.size() && k < 5; ++k) {
    const auto i = static_cast<size_t>(unused[k]);
    names += (k ? ", " : "") + (i < paramNames_.size() ? paramNames_[i] : "param." + std::to_string(i));
  }
  if (unused.size() > 5) {
    names += ", ... (" + std::to_string(unused.size()) + " in all)";
  }
  // DeepSpeed's assertion (ZeRO 1/2 with CPU offload, stage_1_and_2.py), with the parameters named.
  throw AssertionFailure(config_.source + ": This assert indicates that your module has parameters that were not used "
                         "in producing loss: " + names + ". You can avoid this assert by (1) enable "
                         "ignore_unused_parameters option in zero_optimization config; (2) making sure all trainable "
                         "parameters and `forward` function outputs participate in calculating loss.");
}

GradStrategy& Engine::live() const {
  TORCH_CHECK(strategy_, "dsrt::Engine: this engine was released at interpreter exit (its process group is gone)");
  return *strategy_;
}

void Engine::release() {
  strategy_.reset();
  if (dist_ && dist_->pg) {
    // The context may be shared (the C++ frontend's init_distributed): keep its rank fields, drop only our hold.
    auto detached = std::make_shared<DistContext>(*dist_);
    detached->pg.reset();
    dist_ = std::move(detached);
  }
}

c10::Device Engine::paramDevice() const {
  return params_.empty() ? c10::Device(c10::kCPU) : params_.front().device();
}

void Engine::explainForwardError(const std::string& what) const {
  if (precision_.modelDtype != at::kHalf) return;
  if (std::optional<std::string> line = precision::missingHalfKernelLine(what)) {
    TORCH_CHECK(false, precision::fp16Refusal(config_.source, paramDevice(), *line));
  }
}

bool Engine::is_gradient_accumulation_boundary() const {
  if (boundaryOverride_) {
    return *boundaryOverride_;
  }
  return (microSteps_ + 1) % config_.batch.gradientAccumulationSteps == 0;
}

void Engine::set_gradient_accumulation_boundary(bool isBoundary) { boundaryOverride_ = isBoundary; }

double Engine::get_lr() const {
  if (config_.scheduler) {
    return config::learningRate(*config_.scheduler, lastBatchIteration_);
  }
  return config_.optimizer->lr;
}

void Engine::backward(const at::Tensor& loss, bool scaleWrtGas) {
  TORCH_CHECK(loss.defined() && loss.numel() == 1, "engine.backward: loss must be a scalar tensor, got ",
              loss.defined() ? loss.sizes() : at::IntArrayRef{});
  TORCH_CHECK(loss.requires_grad(), "engine.backward: loss does not require grad (was it computed under NoGradGuard?)");
  // With the boundary set by the caller (DeepSpeed's set_gradient_accumulation_boundary), the micro-steps
  // of a window are backward() calls and step() comes once, at the boundary: DeepSpeed allows that.
  // Inside no_sync (and for the reducing backward right after it) DeepSpeed allows backward after
  // backward: no_sync's micro-steps have no step() of their own.
  if (backwardDone_ && !noSync_ && !noSyncUnreduced_) {
    TORCH_CHECK(boundaryOverride_, "engine.backward: called twice in one micro-step; call engine.step() after each backward");
    TORCH_CHECK(windowOpen_, "engine.backward: called again after the backward that ended the gradient accumulation "
                "window; call engine.step() first");
  }
  const bool boundary = is_gradient_accumulation_boundary();
  // no_sync: the strategy sees a micro-step inside the window, so stages 0 and 1 only accumulate.
  const bool reduce = boundary && !noSync_;
  {
    auto scope = timers_.scope(EngineTimers::kBackward);
    live().beginBackward(reduce);
    const auto gas = config_.batch.gradientAccumulationSteps;
    at::Tensor scaled = gas > 1 && scaleWrtGas ? loss / static_cast<double>(gas) : loss;
    if (precision_.fp16) {
      // DeepSpeed: loss.float() (/ gas), times cur_scale (FP16_Optimizer.backward / LossScaler.backward).
      scaled = scaled.to(at::kFloat) * scaler_->scale();
    }
    scaled.backward();
  }
  {
    auto scope = timers_.scope(EngineTimers::kAllreduce);
    live().endBackward(reduce);
  }
  backwardDone_ = true;
  windowOpen_ = !reduce;
  gradState_ = reduce || zero_stage() >= 2 ? GradientState::kReduced : GradientState::kLocal;
  noSyncUnreduced_ = noSync_ || (noSyncUnreduced_ && !reduce);
}

void Engine::set_no_sync(bool inside) {
  TORCH_CHECK(!inside || zero_stage() < 2, "engine.no_sync: no_sync context manager is incompatible with gradient "
              "partitioning logic of ZeRO stage ", zero_stage());
  noSync_ = inside;
}

void Engine::set_train_batch_size(int64_t trainBatchSize) {
  const int64_t perMicroStep = config_.batch.microBatchPerGpu * world_size();
  TORCH_CHECK(trainBatchSize > 0 && trainBatchSize % perMicroStep == 0, "engine.set_train_batch_size: Train batch "
              "size must be divisible by micro-batch data parallelism (", config_.batch.microBatchPerGpu, " x ",
              world_size(), " ranks), got '", trainBatchSize, "'");
  config_.batch.trainBatchSize = trainBatchSize;
  config_.batch.gradientAccumulationSteps = trainBatchSize / perMicroStep;
}

void Engine::set_train_micro_batch_size(int64_t microBatchSize) {
  TORCH_CHECK(microBatchSize > 0, "engine.set_train_micro_batch_size: the micro-batch size must be positive, got '",
              microBatchSize, "'");
  config_.batch.microBatchPerGpu = microBatchSize;
  config_.batch.trainBatchSize = microBatchSize * config_.batch.gradientAccumulationSteps * world_size();
}

void Engine::step() {
  TORCH_CHECK(!noSync_, "engine.step: It is illegal to call Engine.step() inside no_sync context manager");
  TORCH_CHECK(backwardDone_, "engine.step: no engine.backward(loss) since the last step");
  TORCH_CHECK(!(is_gradient_accumulation_boundary() && noSyncUnreduced_),
              "engine.step: the gradients of the backward() calls inside no_sync() were never reduced; call "
              "engine.backward() once more outside no_sync before step(), as torch's DDP.no_sync expects");
  backwardDone_ = false;
  if (is_gradient_accumulation_boundary()) {
    windowOpen_ = false;
    gradState_ = GradientState::kNone;
    {
      auto scope = timers_.scope(EngineTimers::kStep);
      const double scaleBefore = scaler_->scale();
      const bool overflow = precision_.fp16 && anyRankOverflowed();
      if (precision_.fp16) {
        // DeepSpeed updates the scale before the step, and unscales with the updated one.
        const auto update = scaler_->update(overflow);
        if (!update.message.empty() && rank() == 0) {
          std::printf("[dsrt rank 0] %s\n", update.message.c_str());
          std::fflush(stdout);
        }
      }
      if (overflow) {
        // Skipped: no update, no scheduler step; the gradients are dropped (DeepSpeed's zero_grad).
        live().zeroGrad();
        ++skippedSteps_;
      } else {
        checkEveryParameterGotAGradient();
        live().step(get_lr(), gradMultiplier(scaleBefore));
        live().zeroGrad();
        ++lastBatchIteration_;
        applyScheduledMomentum();
      }
    }
    ++globalSteps_;
    globalSamples_ += config_.batch.trainBatchSize;
    progress_.record(globalSteps_);
    if (config_.stepsPerPrint && *config_.stepsPerPrint > 0 && globalSteps_ % *config_.stepsPerPrint == 0) {
      logProgress();
    }
  }
  ++microSteps_;
}

void Engine::zero_grad() {
  live().zeroGrad();
  gradState_ = GradientState::kNone;
  noSyncUnreduced_ = false;
}

void Engine::set_group_settings(std::vector<optim::GroupSettings> settings) {
  live().optimizer().setGroupSettings(std::move(settings));
}

void Engine::applyScheduledMomentum() {
  if (!config_.scheduler) {
    return;
  }
  const bool hasBetas = config_.optimizer->type != config::OptimizerType::SGD &&
                        config_.optimizer->type != config::OptimizerType::Adagrad;
  if (auto betas = config::oneCycleBetas(*config_.scheduler, lastBatchIteration_, hasBetas)) {
    live().optimizer().setBetas((*betas)[0], (*betas)[1]);
  }
}

void Engine::logProgress() {
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - lastPrint_).count();
  const double samplesPerSec = seconds > 0 ? static_cast<double>(globalSamples_ - samplesAtLastPrint_) / seconds : 0.0;
  const int64_t steps = *config_.stepsPerPrint;
  if (rank() == 0) {
    std::ostringstream line;
    line << "[dsrt rank 0] step=" << globalSteps_ << ", skipped=" << skippedSteps_ << ", lr=[" << get_lr()
         << "], samples/s=" << samplesPerSec;
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
