#pragma once
// The schedule of an offloaded optimizer step when the model lives on an accelerator (ZeRO-Offload):
// the partition is cut into pieces; the download of every piece's gradient is issued at once on its own
// stream, the host waits for piece i only when CPU Adam is about to step it, and each finished piece is
// uploaded on another stream while the next one steps. So the step takes about max(copy, CPU Adam)
// instead of their sum (DeepSpeed's ZeRO-Offload overlaps the same way, docs/gpu.md "Offload").
//
// The schedule knows nothing of CUDA: it drives callbacks (the copies, the host-side preparation, the
// optimizer) and a stream/event abstraction, so its order and its exactness are tested on the CPU with
// recording or deferring fake streams (tests/runtime/zero/offload_pipeline_test.cc); c10_pipeline_stream.h
// is the implementation on c10 streams and events. Not thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace dsrt::zero {

/// A point in a PipelineStream's work, recorded after what was enqueued before it (a c10::Event).
class PipelineEvent {
 public:
  virtual ~PipelineEvent() = default;
  /// The host blocks until the work before this event is done.
  virtual void hostWait() = 0;
};

/// An in-order queue of asynchronous work (a device stream).
class PipelineStream {
 public:
  virtual ~PipelineStream() = default;
  /// Runs `issue` with this stream current: what it launches (non_blocking copies) joins the queue. A fake
  /// may keep `issue` and run it later: it holds its operands by value.
  virtual void enqueue(const std::function<void()>& issue) = 0;
  /// An event after everything enqueued so far.
  virtual std::shared_ptr<PipelineEvent> record() = 0;
  /// Work enqueued from now on starts after `event` (no host wait).
  virtual void waitFor(const PipelineEvent& event) = 0;
  /// Runs `launch` now, with this stream current, so what it launches on the current stream starts after
  /// everything enqueued here so far (a collective: c10d makes its own stream wait for the current one).
  /// Unlike enqueue(), never deferred: a fake runs its queue first, then `launch`.
  virtual void launchAfterQueued(const std::function<void()>& launch) = 0;
};

/// The three streams of the schedule: compute (where the gradient was made and where the model is read
/// next), download (device -> host) and upload (host -> device). download and upload may be one stream.
struct PipelineStreams {
  PipelineStream* compute = nullptr;
  PipelineStream* download = nullptr;
  PipelineStream* upload = nullptr;
};

/// What a step does to piece [begin, end) of the partition.
struct OffloadPieceOps {
  /// Issues the copy of the gradient piece into host memory (run under download's enqueue). Null when the
  /// gradient is already in host memory (ZeRO-2/3 offload reduce straight into it).
  std::function<void(int64_t begin, int64_t end)> download;
  /// On the host, once the piece is downloaded and before it steps (the unscale/clip multiply). May be null.
  std::function<void(int64_t begin, int64_t end)> prepare;
  /// Runs the optimizer over all pieces in order, calling stepped(end) as soon as [0, end) is final:
  /// FlatOptimizer::stepInPieces, which keeps the result bit-identical to one step.
  std::function<void(const std::vector<int64_t>& ends, const std::function<void(int64_t end)>& stepped)> step;
  /// Whether `step` reads piece i's gradient only after it reported every piece before i
  /// (FlatOptimizer::stepsPieceByPiece). When false, every piece is downloaded and prepared before step runs.
  bool stepStreamsPieces = true;
  /// Issues the copy of the finished piece to the device (run under upload's enqueue).
  std::function<void(int64_t begin, int64_t end)> upload;
};

/// Carries out one offloaded step on `streams`. pieceEnds: increasing, the last the partition's numel
/// (offloadPieceEnds). reportEnds: increasing, each one of pieceEnds; reported(end) is called once [0, end) is
/// uploaded as far as the compute stream is concerned (it waits for the upload), so work the caller then
/// enqueues on compute (an all-gather) sees the new values. The host waits once per downloaded piece and
/// never for an upload.
void runOffloadPipeline(const std::vector<int64_t>& pieceEnds, const OffloadPieceOps& ops,
                        const PipelineStreams& streams, const std::vector<int64_t>& reportEnds,
                        const std::function<void(int64_t end)>& reported);

/// The pieces of an offloaded step over `numel` elements: every end of `required` (the caller's own
/// boundaries, e.g. all-gather shards; the last must be numel) plus cuts every `pieceNumel` elements
/// (rounded up to a multiple of `align`), so no piece is longer than pieceNumel + align. Pure.
/// Throws std::invalid_argument when pieceNumel or align < 1 or required does not end at numel.
std::vector<int64_t> offloadPieceEnds(int64_t numel, const std::vector<int64_t>& required, int64_t pieceNumel,
                                      int64_t align);

}  // namespace dsrt::zero
