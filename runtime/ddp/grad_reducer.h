#pragma once
// Carries out a bucket plan (runtime/ddp/bucket_plan.h): the stateful half of stage 0, after c10d's
// Reducer. Every parameter's .grad is a view into one flat gradient buffer laid out bucket after
// bucket, so autograd accumulates straight into the buffer the allreduce reads (PyTorch DDP's
// gradient_as_bucket_view) and no copy happens on either side of the communication.

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "runtime/comms/pending_comm.h"
#include "runtime/compat/grad_accumulator.h"
#include "runtime/ddp/bucket_plan.h"

namespace c10d {
class ProcessGroup;
class Work;
}  // namespace c10d
namespace dsrt::ddp {

/// Hooks every parameter's gradient accumulator; at a boundary micro-step launches each bucket's
/// asynchronous allreduce as soon as all its gradients are final (in bucket order, so every rank
/// issues collectives in the same sequence), and finish() waits and averages by world size.
/// On other micro-steps the hooks do nothing and gradients just accumulate in the flat buffer.
/// Single-threaded: prepare/finish/zero from the training thread; hooks run on autograd's thread,
/// which for CPU tensors is the thread calling backward(). Errors: c10::Error.
class GradReducer {
 public:
  /// `params`: trainable leaves, one dtype and device; `plan` from planBuckets over their sizes.
  /// overlap=false defers every allreduce to finish() (no communication during backward).
  GradReducer(std::vector<at::Tensor> params, c10::intrusive_ptr<c10d::ProcessGroup> pg,
              std::vector<Bucket> plan, bool overlap);
  ~GradReducer();
  GradReducer(const GradReducer&) = delete;
  GradReducer& operator=(const GradReducer&) = delete;

  /// Before backward: arms the hooks for a boundary (reduce) or non-boundary (accumulate only) step.
  void prepare(bool isBoundary);
  /// After a boundary backward: launches buckets not launched yet (unused parameters, overlap=false),
  /// waits for all of them and divides by world size. Returns seconds spent waiting.
  double finish();
  /// Zeroes the flat gradient buffer and re-points any .grad the user replaced back at its view.
  void zeroGrad();
  /// communication_data_type: each bucket is allreduced as a `dtype` copy, divided by the world size in
  /// that dtype and copied back (DeepSpeed's engine.allreduce_bucket). Call before the first backward.
  void setCommDtype(at::ScalarType dtype) { commDtype_ = dtype; }
  /// comms_logger: each bucket's allreduce is recorded as an all_reduce; null records nothing.
  void setCommsLog(std::shared_ptr<comms::CommsLog> log) { commsLog_ = std::move(log); }

  /// The flat gradient buffer (all parameters, bucket order).
  const at::Tensor& flatGrad() const { return flat_; }
  /// Element offset of parameter i's gradient in flatGrad().
  int64_t offsetOf(size_t i) const { return offsets_[i]; }
  /// Number of buckets in the plan (for logs and tests).
  size_t numBuckets() const { return buckets_.size(); }
  /// Buckets whose allreduce started during the last backward, before finish() (overlap evidence).
  int launchedDuringBackward() const { return launchedEarly_; }

 private:
  void onGradReady(size_t i);
  void launchReadyInOrder();
  void launch(size_t b);
  at::Tensor viewOf(size_t i) const;
  /// Makes parameter i's .grad the view into flat_ again, copying a replacement tensor's values in.
  void adoptGrad(size_t i);

  std::vector<at::Tensor> params_;
  c10::intrusive_ptr<c10d::ProcessGroup> pg_;
  std::vector<Bucket> buckets_;
  bool overlap_;
  at::Tensor flat_;                      ///< all gradients, bucket after bucket
  std::vector<int64_t> offsets_;         ///< per parameter: offset in flat_
  std::vector<size_t> bucketOf_;         ///< per parameter: its bucket
  std::vector<int64_t> bucketStart_;     ///< per bucket: offset in flat_
  std::vector<at::Tensor> bucketViews_;  ///< per bucket: flat_ slice the allreduce reads and writes
  /// Grad accumulators must be kept alive: a tensor holds only a weak_ptr to its accumulator, and a
  /// dropped accumulator never runs its hooks (docs/platform.md §2).
  std::vector<compat::GradAccumulatorPtr> accumulators_;
  std::vector<uintptr_t> hookKeys_;
  bool boundary_ = false;
  std::vector<char> ready_;      ///< per parameter, this backward
  std::vector<int64_t> pending_;  ///< per bucket: parameters not ready yet
  size_t nextLaunch_ = 0;        ///< buckets [0, nextLaunch_) are launched
  int launchedEarly_ = 0;
  std::vector<c10::intrusive_ptr<c10d::Work>> works_;
  std::optional<at::ScalarType> commDtype_;
  std::vector<at::Tensor> wires_;  ///< per bucket: its commDtype copy while in flight (else undefined)
  std::shared_ptr<comms::CommsLog> commsLog_;
  std::vector<comms::PendingComm> timings_;  ///< per bucket: its comms_logger record while in flight
};

}  // namespace dsrt::ddp
