#include "runtime/zero/master_partition.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>

#include "runtime/optim/flat_optimizer.h"
#include "runtime/zero/c10_pipeline_stream.h"

namespace dsrt::zero {
namespace {

// Host memory for offloaded state: page-locked only when asked and a CUDA runtime can pin it.
at::Tensor hostBuffer(int64_t numel, at::ScalarType dtype, bool pin) {
  auto options = at::TensorOptions().dtype(dtype).device(at::kCPU);
  if (pin && at::hasCUDA()) {
    options = options.pinned_memory(true);
  }
  return at::empty({numel}, options);
}

}  // namespace

MasterPartition::MasterPartition(const at::Tensor& modelPartition, bool offload, bool pinMemory)
    : model_(modelPartition), offload_(offload), aliased_(!offload && modelPartition.scalar_type() == at::kFloat) {
  TORCH_CHECK(model_.dim() == 1 && model_.is_contiguous(), "zero: the model partition must be a flat contiguous view");
  c10::AutoGradMode noGrad(false);
  if (aliased_) {
    master_ = model_;
    return;
  }
  if (offload_) {
    master_ = hostBuffer(model_.numel(), at::kFloat, pinMemory);
    hostGrad_ = hostBuffer(model_.numel(), at::kFloat, pinMemory);
    if (!model_.device().is_cpu() && model_.scalar_type() != at::kFloat) {
      hostLow_ = hostBuffer(model_.numel(), model_.scalar_type(), pinMemory);
    }
  } else {
    master_ = at::empty({model_.numel()}, model_.options().dtype(at::kFloat));
  }
  master_.copy_(model_);
}

void MasterPartition::step(optim::FlatOptimizer& optimizer, const at::Tensor& grad, double gradScale, double lr) {
  step(optimizer, grad, gradScale, lr, {model_.numel()}, nullptr);
}

void MasterPartition::step(optim::FlatOptimizer& optimizer, const at::Tensor& grad, double gradScale, double lr,
                           const std::vector<int64_t>& pieceEnds, const std::function<void(int64_t end)>& pieceDone) {
  c10::AutoGradMode noGrad(false);
  TORCH_CHECK(grad.numel() == model_.numel(), "zero: gradient partition has ", grad.numel(), " elements, expected '",
              model_.numel(), "'");
  if (aliased_) {
    at::Tensor g = grad;
    if (gradScale != 1.0) {
      g.mul_(gradScale);
    }
    optimizer.stepInPieces(master_, g, lr, at::Tensor(), pieceEnds, pieceDone);
    return;
  }
  const bool lowPrecision = model_.scalar_type() != at::kFloat;
  if (!offload_) {
    // DeepSpeed: single_grad_partition = flat(averaged_gradients).to(fp32), unscaled, stepped, copied back.
    // Into a kept buffer: a partition-sized temporary (often >= glibc's 32 MiB mmap ceiling) would be
    // mapped and faulted in again on every step.
    if (!grad32_.defined()) {
      grad32_ = at::empty({model_.numel()}, model_.options().dtype(at::kFloat));
    }
    at::Tensor g32 = grad32_;
    g32.copy_(grad);
    if (gradScale != 1.0) {
      g32.mul_(gradScale);
    }
    optimizer.stepInPieces(master_, g32, lr, model_, pieceEnds, pieceDone);
    return;
  }
  if (model_.device().is_cpu() && injectedStreams_.compute == nullptr) {
    if (!grad.is_same(hostGrad_)) {
      hostGrad_.copy_(grad);
    }
    if (gradScale != 1.0) {
      hostGrad_.mul_(gradScale);
    }
    // The "device" is host memory too: an fp16/bf16 model receives the values from CPU Adam's own pass,
    // an fp32 model by a copy of each finished piece.
    if (lowPrecision) {
      optimizer.stepInPieces(master_, hostGrad_, lr, model_, pieceEnds, pieceDone);
      return;
    }
    int64_t copied = 0;
    optimizer.stepInPieces(master_, hostGrad_, lr, at::Tensor(), pieceEnds, [&](int64_t end) {
      model_.narrow(0, copied, end - copied).copy_(master_.narrow(0, copied, end - copied));
      copied = end;
      if (pieceDone) {
        pieceDone(end);
      }
    });
    return;
  }
  stepPipelined(optimizer, grad, gradScale, lr, pieceEnds, pieceDone);
}

void MasterPartition::stepPipelined(optim::FlatOptimizer& optimizer, const at::Tensor& grad, double gradScale,
                                    double lr, const std::vector<int64_t>& pieceEnds,
                                    const std::function<void(int64_t end)>& pieceDone) {
  // A 16-bit model receives CPU Adam's fused 16-bit copy, an fp32 model the master itself.
  if (model_.scalar_type() != at::kFloat && !hostLow_.defined()) {
    hostLow_ = at::empty({model_.numel()}, model_.options().device(at::kCPU));  // a CPU model on injected streams
  }
  const at::Tensor lowOut = model_.scalar_type() != at::kFloat ? hostLow_ : at::Tensor();
  // The copies hold their tensors by value: a stream may issue them after this call returns.
  OffloadPieceOps ops;
  if (!grad.is_same(hostGrad_)) {  // ZeRO-2/3 offload reduce straight into hostGrad_: nothing to download
    ops.download = [host = hostGrad_, grad](int64_t begin, int64_t end) {
      host.narrow(0, begin, end - begin).copy_(grad.narrow(0, begin, end - begin), /*non_blocking=*/true);
    };
  }
  if (gradScale != 1.0) {
    ops.prepare = [this, gradScale](int64_t begin, int64_t end) {
      hostGrad_.narrow(0, begin, end - begin).mul_(gradScale);
    };
  }
  ops.step = [&](const std::vector<int64_t>& ends, const std::function<void(int64_t)>& stepped) {
    optimizer.stepInPieces(master_, hostGrad_, lr, lowOut, ends, stepped);
  };
  ops.stepStreamsPieces = optimizer.stepsPieceByPiece();
  ops.upload = [model = model_, src = lowOut.defined() ? lowOut : master_](int64_t begin, int64_t end) {
    model.narrow(0, begin, end - begin).copy_(src.narrow(0, begin, end - begin), /*non_blocking=*/true);
  };
  const std::vector<int64_t> ends =
      offloadPieceEnds(model_.numel(), pieceEnds, pieceNumel_, optim::FlatOptimizer::kPieceAlign);
  if (injectedStreams_.compute != nullptr) {
    runOffloadPipeline(ends, ops, injectedStreams_, pieceEnds, pieceDone);
    return;
  }
  if (!upload_) {
    download_ = std::make_shared<C10PipelineStream>(C10PipelineStream::fromPool(model_.device()));
    upload_ = std::make_shared<C10PipelineStream>(C10PipelineStream::fromPool(model_.device()));
  }
  // The compute stream is whichever is current now: the caller's kernels (and the all-gather) run there.
  C10PipelineStream compute = C10PipelineStream::current(model_.device());
  runOffloadPipeline(ends, ops, PipelineStreams{&compute, download_.get(), upload_.get()}, pieceEnds, pieceDone);
}

void MasterPartition::load(const at::Tensor& fp32) {
  c10::AutoGradMode noGrad(false);
  TORCH_CHECK(fp32.numel() == master_.numel(), "zero: master partition of ", master_.numel(),
              " elements expected, got '", fp32.numel(), "'");
  master_.copy_(fp32.reshape({-1}));
  if (!aliased_) {
    model_.copy_(master_);
  }
}

void MasterPartition::loadFromModel() {
  c10::AutoGradMode noGrad(false);
  if (!aliased_) {
    master_.copy_(model_);
  }
}

int64_t MasterPartition::deviceBytes() const {
  return aliased_ || offload_ ? 0 : static_cast<int64_t>(master_.nbytes());
}

int64_t MasterPartition::hostBytes() const {
  if (!offload_) {
    return 0;
  }
  return static_cast<int64_t>(master_.nbytes() + hostGrad_.nbytes() + (hostLow_.defined() ? hostLow_.nbytes() : 0));
}

}  // namespace dsrt::zero
