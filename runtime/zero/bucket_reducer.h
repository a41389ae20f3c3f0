#pragma once
// Carries out a planReduceBuckets() plan: counts which parameters' gradients are ready, launches each
// bucket's reduction asynchronously as soon as it and every bucket before it are complete (so every
// rank issues the same collectives in the same order), and hands this rank its averaged run of each
// bucket when the reduction finishes.
//
// Reduce-scatter (collective_choice.h picks by backend and device): on NCCL, each rank's run padded to
// an even split and one reduce_scatter_tensor; on Gloo (torch 1.13 has no reduce_scatter for Gloo),
// alltoall_base with the bucket's per-rank counts, then a local sum of the worldSize received copies of
// this rank's run. Measured here against allreduce + keep the slice and against a send/recv ring: 1.6-2x
// faster than allreduce, 1.2-1.4x faster than the ring, and one asynchronous op (docs/zero.md has the table).
//
// Nothing bucket-sized is allocated per step: receive buffers, the sum and communication_data_type
// copies come from pools that are filled on first use and recycled (a multi-MB tensor freed every step
// goes back to the kernel and faults in again on the next: docs/zero.md, "Step time").

#include "runtime/comms/pending_comm.h"
#include "runtime/engine_timers.h"
#include "runtime/zero/collective_choice.h"
#include "runtime/zero/reduce_bucket_plan.h"

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace c10d {
class ProcessGroup;
class Work;
}  // namespace c10d

namespace dsrt::zero {

/// How a bucket is reduced.
enum class ReduceMode {
  kReduceScatter,  ///< alltoall + local sum: each rank receives only its run (zero_optimization.reduce_scatter)
  kAllreduce,      ///< allreduce the whole bucket in place, every rank keeps its run
};

/// What the owner of the gradients supplies.
struct BucketIo {
  /// The bucket's gradient in flat order (bucket.numel() fp32 elements, contiguous), at launch.
  /// It must stay untouched until deliver() is called for the bucket.
  std::function<at::Tensor(size_t bucket)> input;
  /// This rank's run of the bucket, averaged over ranks (rankNumels[rank] elements; possibly a view
  /// of the input), called on the thread that completes the bucket, in launch order.
  std::function<void(size_t bucket, const at::Tensor& averagedRun)> deliver;
  /// Optional: where the averaged run of `bucket` may be written directly (rankNumels[rank] contiguous
  /// elements), saving a copy; used only when its dtype and device match the collective's. deliver()
  /// then receives this tensor. Undefined or empty function: a recycled buffer is used.
  std::function<at::Tensor(size_t bucket)> output;
  /// Optional: called before a recycled receive or sum buffer (one an earlier deliver() may have been
  /// given) is written again on the current stream. An owner that reads averaged runs asynchronously
  /// (offload's downloads on a side stream) makes the current stream wait for those reads here.
  std::function<void()> beforeReuse;
};

/// Not thread-safe: markReady() (autograd's thread) and the other calls must not overlap, which
/// holds for CPU backward. Collective failures throw c10::Error.
class BucketReducer {
 public:
  BucketReducer(c10::intrusive_ptr<c10d::ProcessGroup> pg, int rank, int worldSize,
                std::vector<ReduceBucket> buckets, int64_t numParams, ReduceMode mode, bool overlap, BucketIo io);
  ~BucketReducer();

  /// Parameter `param`'s gradient is final for this micro-step; launches whatever became launchable
  /// (and, without overlap, waits for it at once). Throws if `param` was already marked.
  void markReady(int64_t param);
  /// Launches every bucket not yet launched (missing gradients are the input's business), completes
  /// all of them, and resets readiness for the next micro-step.
  void flush();
  /// Completes the oldest launched bucket; false if none is in flight.
  bool completeOldest();

  const std::vector<ReduceBucket>& buckets() const { return buckets_; }

  /// communication_data_type: each bucket is converted to `dtype` for the collective (reduce-scatter:
  /// divided by worldSize first, as DeepSpeed's average_tensor; allreduce: divided after and copied
  /// back into the input, as gradient_reduction_w_predivide). Averaged runs are then in `dtype`;
  /// deliver() converts them on copy. Call before the first markReady().
  void setCommDtype(at::ScalarType dtype) { commDtype_ = dtype; }
  /// wall_clock_breakdown: waits go to kReduceScatter, sums and deliveries to kGradCopy (null: untimed).
  void setTimers(EngineTimers* timers) { timers_ = timers; }
  /// comms_logger: each bucket's collective is recorded (all_reduce, or reduce_scatter_tensor of the whole
  /// bucket as deepspeed.comm measures it); null records nothing.
  void setCommsLog(std::shared_ptr<comms::CommsLog> log) { commsLog_ = std::move(log); }
  /// Tests: reduce-scatter this way whatever the backend (a padded reduce_scatter_tensor on Gloo, which
  /// torch 2.x implements). Unset: chooseBucketReduceScatter(backend, the bucket's device).
  void setReduceScatterChoice(std::optional<BucketReduceScatter> choice) { forcedChoice_ = choice; }

 private:
  struct Pending;
  static constexpr size_t kMaxPooledInFlight = 2;
  void launch(size_t bucket);
  /// Padded reduce-scatter: p.wire becomes the bucket with every rank's run padded to b.evenChunk().
  void padBucket(const ReduceBucket& b, Pending& p);
  /// kReduceScatter: divides p.wire by worldSize and posts its reduce-scatter.
  void launchReduceScatter(const ReduceBucket& b, Pending& p);
  /// A recycled buffer of at least `numel` elements of `options` from `pool` (allocated on first use).
  static at::Tensor takeBuffer(std::vector<at::Tensor>& pool, int64_t numel, const at::TensorOptions& options);

  c10::intrusive_ptr<c10d::ProcessGroup> pg_;
  int rank_;
  int worldSize_;
  std::vector<ReduceBucket> buckets_;
  std::vector<int64_t> bucketOf_;   ///< bucket index of each parameter
  ReduceMode mode_;
  bool overlap_;
  BucketIo io_;
  std::optional<at::ScalarType> commDtype_;
  EngineTimers* timers_ = nullptr;
  std::shared_ptr<comms::CommsLog> commsLog_;
  std::optional<BucketReduceScatter> forcedChoice_;
  std::vector<int64_t> missing_;    ///< per bucket: parameters not yet ready this micro-step
  std::vector<bool> ready_;         ///< per parameter
  size_t nextLaunch_ = 0;           ///< buckets [0, nextLaunch_) are launched
  std::deque<Pending> inFlight_;    ///< launched, not yet delivered, in launch order
  int64_t maxBucketNumel_ = 0;      ///< size of every pooled wire buffer
  int64_t maxRunNumel_ = 0;         ///< largest rankNumels[rank_]; pooled receive buffers hold worldSize of it
  int64_t maxChunkNumel_ = 0;       ///< largest evenChunk(): padded buffers hold worldSize of it
  std::vector<at::Tensor> freeReceive_;  ///< kReduceScatter receive buffers not in flight
  std::vector<at::Tensor> freeWire_;     ///< commDtype copies of buckets not in flight
  at::Tensor sum_;                       ///< the averaged run when io_.output gives no destination
};

}  // namespace dsrt::zero
