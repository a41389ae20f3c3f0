#include "runtime/zero/bucket_reducer.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

namespace dsrt::zero {

struct BucketReducer::Pending {
  size_t bucket = 0;
  c10::intrusive_ptr<c10d::Work> work;  ///< null when nothing was sent (one rank)
  at::Tensor input;                     ///< kept alive until the collective is done
  at::Tensor wire;                      ///< what the collective reads: input, or its commDtype copy
  at::Tensor received;                  ///< kReduceScatter: worldSize copies of this rank's run
  std::vector<int64_t> inCounts;        ///< alltoall split sizes (the op keeps references)
  std::vector<int64_t> outCounts;
};

BucketReducer::BucketReducer(c10::intrusive_ptr<c10d::ProcessGroup> pg, int rank, int worldSize,
                             std::vector<ReduceBucket> buckets, int64_t numParams, ReduceMode mode, bool overlap,
                             BucketIo io)
    : pg_(std::move(pg)),
      rank_(rank),
      worldSize_(worldSize),
      buckets_(std::move(buckets)),
      bucketOf_(bucketOfParam(buckets_, numParams)),
      mode_(mode),
      overlap_(overlap),
      io_(std::move(io)),
      ready_(static_cast<size_t>(numParams), false) {
  for (const auto& b : buckets_) {
    missing_.push_back(b.endParam - b.firstParam);
  }
}

BucketReducer::~BucketReducer() {
  // Never leave a collective writing into buffers that are about to be freed.
  for (auto& p : inFlight_) {
    if (p.work) {
      try {
        p.work->wait();
      } catch (const std::exception&) {  // already failing; the destructor must not throw
      }
    }
  }
}

void BucketReducer::markReady(int64_t param) {
  TORCH_CHECK(!ready_[static_cast<size_t>(param)], "zero: parameter ", param,
              " got its gradient twice in one micro-step (reentrant or repeated backward), got 'a second call'");
  ready_[static_cast<size_t>(param)] = true;
  const auto b = static_cast<size_t>(bucketOf_[static_cast<size_t>(param)]);
  missing_[b] -= 1;
  while (nextLaunch_ < buckets_.size() && missing_[nextLaunch_] == 0) {
    launch(nextLaunch_++);
    if (!overlap_) {
      completeOldest();
    }
  }
}

void BucketReducer::launch(size_t bucket) {
  const ReduceBucket& b = buckets_[bucket];
  Pending p;
  p.bucket = bucket;
  p.input = io_.input(bucket);
  TORCH_CHECK(p.input.numel() == b.numel() && p.input.is_contiguous(), "zero: bucket ", bucket, " input has ",
              p.input.numel(), " elements, expected '", b.numel(), "'");
  p.wire = p.input;
  if (worldSize_ > 1 && commDtype_ && *commDtype_ != p.input.scalar_type()) {
    c10::AutoGradMode noGrad(false);
    p.wire = p.input.to(*commDtype_);
  }
  if (worldSize_ > 1 && mode_ == ReduceMode::kAllreduce) {
    std::vector<at::Tensor> tensors{p.wire};
    p.work = pg_->allreduce(tensors);
  } else if (worldSize_ > 1) {
    c10::AutoGradMode noGrad(false);
    // DeepSpeed's average_tensor divides before the reduce-scatter, so a 16-bit sum cannot overflow
    // where the average would not (exact for power-of-two world sizes).
    p.wire.div_(worldSize_);
    p.inCounts = b.rankNumels;
    p.outCounts.assign(static_cast<size_t>(worldSize_), b.rankNumels[static_cast<size_t>(rank_)]);
    p.received = at::empty({worldSize_ * b.rankNumels[static_cast<size_t>(rank_)]}, p.wire.options());
    p.work = pg_->alltoall_base(p.received, p.wire, p.outCounts, p.inCounts);
  }
  inFlight_.push_back(std::move(p));
}

bool BucketReducer::completeOldest() {
  if (inFlight_.empty()) {
    return false;
  }
  Pending p = std::move(inFlight_.front());
  inFlight_.pop_front();
  if (p.work) {
    p.work->wait();
  }
  const ReduceBucket& b = buckets_[p.bucket];
  const int64_t run = b.rankNumels[static_cast<size_t>(rank_)];
  c10::AutoGradMode noGrad(false);
  at::Tensor averaged;
  if (worldSize_ == 1) {
    averaged = p.input;
  } else if (mode_ == ReduceMode::kAllreduce) {
    // Average the whole bucket, not just the run: ZeRO-1 then leaves correct full gradients behind.
    p.wire.div_(worldSize_);
    if (!p.wire.is_same(p.input)) {
      p.input.copy_(p.wire);
    }
    averaged = p.input.narrow(0, b.rankOffset(rank_), run);
  } else {
    // Row r holds rank r's copy (already divided); summing rows in rank order makes every world
    // size's sum deterministic.
    averaged = p.received.view({worldSize_, run}).sum(0);
  }
  io_.deliver(p.bucket, averaged);
  return true;
}

void BucketReducer::flush() {
  while (nextLaunch_ < buckets_.size()) {
    launch(nextLaunch_++);
  }
  while (completeOldest()) {
  }
  nextLaunch_ = 0;
  std::fill(ready_.begin(), ready_.end(), false);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    missing_[b] = buckets_[b].endParam - buckets_[b].firstParam;
  }
}

}  // namespace dsrt::zero
