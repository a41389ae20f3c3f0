#pragma once
// The fp32 master copy of one rank's ZeRO partition: what the optimizer updates when the model is in
// fp16/bf16 (DeepSpeed's single_partition_of_fp32_groups) and, with ZeRO-Offload
// (offload_optimizer.device = cpu), where the master, an fp32 gradient partition and the optimizer
// state live in host memory. A step turns the averaged gradient partition (model dtype, device) into
// fp32, multiplies it by the combined unscale/clip factor, runs the optimizer on the master and writes
// the result back into the model-dtype partition (fused into CPU Adam where the layout allows).
//
// fp32 without offload needs none of this: the master then IS the model's partition (aliased, no copy),
// so the stage 1/2 fp32 path is unchanged.
//
// Device copies: where the model lives on a GPU, an offloaded step is a piece pipeline
// (offload_pipeline.h): gradient downloads on one side stream, CPU Adam piece by piece as each arrives,
// uploads of finished pieces on another, ordered against the compute stream with events. The copies
// overlap the host only from page-locked memory (offload_optimizer.pin_memory). Not thread-safe.

#include <ATen/core/Tensor.h>

#include "runtime/zero/offload_pipeline.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace dsrt::optim {
class FlatOptimizer;
}  // namespace dsrt::optim

namespace dsrt::zero {

class MasterPartition {
 public:
  /// `modelPartition`: this rank's contiguous partition of the flat parameters (fp32, fp16 or bf16; it
  /// must stay alive and in place). Copies its values into the master.
  MasterPartition(const at::Tensor& modelPartition, bool offload, bool pinMemory);

  /// The fp32 master partition (host memory when offloaded; the model partition itself when aliased).
  const at::Tensor& master() const { return master_; }
  /// Offload: the fp32 gradient partition in host memory (undefined without offload). ZeRO-2 accumulates
  /// its averaged gradients straight into it during backward; step() then skips the download.
  const at::Tensor& hostGrad() const { return hostGrad_; }
  /// True when master() is the model partition (fp32 model, no offload).
  bool aliased() const { return aliased_; }
  bool offloaded() const { return offload_; }

  /// One optimizer step: gradient (model dtype, `modelPartition` numel) * gradScale, in fp32, updates the
  /// master; the model partition receives the new values. An aliased master scales `grad` in place.
  void step(optim::FlatOptimizer& optimizer, const at::Tensor& grad, double gradScale, double lr);
  /// The same step, computed in pieces (FlatOptimizer::stepInPieces): pieceDone(end) runs as soon as the
  /// model partition holds its new values in [0, end), so the caller can send them while the rest is
  /// computed. Where the model lives on an accelerator, pieceDone(end) runs once the compute stream waits
  /// for the upload of [0, end).
  void step(optim::FlatOptimizer& optimizer, const at::Tensor& grad, double gradScale, double lr,
            const std::vector<int64_t>& pieceEnds, const std::function<void(int64_t end)>& pieceDone);
  /// Sets the master from `fp32` and the model partition from the master.
  void load(const at::Tensor& fp32);
  /// Sets the master from the model partition (after the model's values were set directly).
  void loadFromModel();

  /// Tests: run the accelerator's piece pipeline on these streams (they must outlive this object) even for a
  /// CPU model partition, cut every `pieceNumel` elements, so its order and exactness are checked without
  /// a device.
  void usePipelineStreams(const PipelineStreams& streams, int64_t pieceNumel) {
    injectedStreams_ = streams;
    pieceNumel_ = pieceNumel;
  }

  /// Elements per piece of the offload pipeline: 16 MiB of fp32, small enough that the first download and
  /// the last upload (the parts nothing overlaps) are short, large enough that CPU Adam's threads and a
  /// copy's launch cost little per piece.
  static constexpr int64_t kOffloadPieceNumel = int64_t{1} << 22;

  /// Bytes held besides the model partition on the model's device (a non-aliased, non-offloaded master).
  int64_t deviceBytes() const;
  /// Bytes held in host memory for offload (master, fp32 gradient buffer, upload staging); 0 otherwise.
  int64_t hostBytes() const;

 private:
  /// The offloaded step of a model on an accelerator (or on injected streams): the piece pipeline.
  void stepPipelined(optim::FlatOptimizer& optimizer, const at::Tensor& grad, double gradScale, double lr,
                     const std::vector<int64_t>& pieceEnds, const std::function<void(int64_t end)>& pieceDone);

  at::Tensor model_;     ///< the model-dtype partition (a view of the flat parameter buffer)
  at::Tensor master_;    ///< fp32
  at::Tensor hostGrad_;  ///< offload: fp32 gradient partition in host memory
  at::Tensor hostLow_;   ///< offload to an accelerator in fp16/bf16: what CPU Adam writes, then uploads
  at::Tensor grad32_;    ///< no offload, 16-bit model: the fp32 gradient a step makes (kept, not model state)
  bool offload_;
  bool aliased_;
  PipelineStreams injectedStreams_;  ///< tests only; compute == nullptr: the device's own streams
  /// The device's copy streams, taken from its pool once: the next step's first wait is on the same upload
  /// stream as this step's uploads.
  std::shared_ptr<PipelineStream> download_;
  std::shared_ptr<PipelineStream> upload_;
  int64_t pieceNumel_ = kOffloadPieceNumel;
};

}  // namespace dsrt::zero
