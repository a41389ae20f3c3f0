#include "runtime/zero/bucket_reducer.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <algorithm>

#include "runtime/compat/process_group_compat.h"
#include "runtime/compat/reduce_scatter_tensor.h"

namespace dsrt::zero {

struct BucketReducer::Pending {
  size_t bucket = 0;
  c10::intrusive_ptr<c10d::Work> work;  ///< null when nothing was sent (one rank)
  at::Tensor input;                     ///< kept alive until the collective is done
  at::Tensor wire;                      ///< what the collective reads: input, or its commDtype copy
  at::Tensor wireBase;                  ///< pooled buffer `wire` views (commDtype only)
  at::Tensor received;                  ///< alltoall: worldSize copies of this rank's run; padded: the summed chunk
  at::Tensor receivedBase;              ///< pooled buffer `received` views
  std::vector<int64_t> inCounts;        ///< alltoall split sizes (the op keeps references)
  std::vector<int64_t> outCounts;
  bool padded = false;                  ///< reduce_scatter_tensor of the padded bucket
  comms::PendingComm timing;            ///< comms_logger record of the collective
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
    maxBucketNumel_ = std::max(maxBucketNumel_, b.numel());
    maxRunNumel_ = std::max(maxRunNumel_, b.rankNumels[static_cast<size_t>(rank_)]);
    maxChunkNumel_ = std::max(maxChunkNumel_, b.evenChunk());
  }
}

at::Tensor BucketReducer::takeBuffer(std::vector<at::Tensor>& pool, int64_t numel, const at::TensorOptions& options) {
  while (!pool.empty()) {
    at::Tensor t = std::move(pool.back());
    pool.pop_back();
    if (t.numel() >= numel && t.dtype() == options.dtype() && t.device() == options.device()) {
      return t;
    }
  }
  return at::empty({numel}, options);
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
  const bool pooled = worldSize_ > 1 && (mode_ == ReduceMode::kReduceScatter || commDtype_);
  // Buckets that need pooled buffers are capped at kMaxPooledInFlight in flight, so the pools hold that
  // many buffers, not one per bucket (stage 1 launches every bucket before waiting for any). Gloo runs
  // collectives in order, so the oldest is usually done by the time a third bucket is ready.
  while (pooled && inFlight_.size() >= kMaxPooledInFlight) {
    completeOldest();
  }
  Pending p;
  p.bucket = bucket;
  p.input = io_.input(bucket);
  TORCH_CHECK(p.input.numel() == b.numel() && p.input.is_contiguous(), "zero: bucket ", bucket, " input has ",
              p.input.numel(), " elements, expected '", b.numel(), "'");
  p.wire = p.input;
  p.padded = worldSize_ > 1 && mode_ == ReduceMode::kReduceScatter &&
             forcedChoice_.value_or(chooseBucketReduceScatter(pg_->getBackendName(), p.input.device().type())) ==
                 BucketReduceScatter::kPaddedTensor;
  if (p.padded) {
    padBucket(b, p);
  } else if (worldSize_ > 1 && commDtype_ && *commDtype_ != p.input.scalar_type()) {
    c10::AutoGradMode noGrad(false);
    p.wireBase = takeBuffer(freeWire_, maxBucketNumel_, p.input.options().dtype(*commDtype_));
    p.wire = p.wireBase.narrow(0, 0, b.numel());
    p.wire.copy_(p.input);
  }
  if (worldSize_ > 1 && mode_ == ReduceMode::kAllreduce) {
    std::vector<at::Tensor> tensors{p.wire};
    p.timing = comms::PendingComm::start(commsLog_, comms::kAllReduce, p.wire);
    p.work = pg_->allreduce(tensors);
  } else if (worldSize_ > 1) {
    launchReduceScatter(b, p);
  }
  p.timing.watch(p.work);
  inFlight_.push_back(std::move(p));
}

void BucketReducer::padBucket(const ReduceBucket& b, Pending& p) {
  c10::AutoGradMode noGrad(false);
  // Rank r's run moves to r * chunk, zeros after it: reduce_scatter_tensor needs an even split. The copy
  // is also the communication_data_type conversion when there is one (the bucket is read once).
  const int64_t chunk = b.evenChunk();
  const at::ScalarType wireDtype = commDtype_.value_or(p.input.scalar_type());
  if (chunk * worldSize_ == b.numel() && wireDtype == p.input.scalar_type()) {
    return;  // already an even split (a bucket spanning whole partitions): the input is the wire
  }
  p.wireBase = takeBuffer(freeWire_, worldSize_ * maxChunkNumel_, p.input.options().dtype(wireDtype));
  p.wire = p.wireBase.narrow(0, 0, worldSize_ * chunk);
  int64_t offset = 0;
  for (int r = 0; r < worldSize_; ++r) {
    const int64_t n = b.rankNumels[static_cast<size_t>(r)];
    at::Tensor slot = p.wire.narrow(0, r * chunk, chunk);
    slot.narrow(0, 0, n).copy_(p.input.narrow(0, offset, n));
    slot.narrow(0, n, chunk - n).zero_();
    offset += n;
  }
}

void BucketReducer::launchReduceScatter(const ReduceBucket& b, Pending& p) {
  c10::AutoGradMode noGrad(false);
  // DeepSpeed's average_tensor divides before the reduce-scatter, so a 16-bit sum cannot overflow
  // where the average would not (exact for power-of-two world sizes).
  p.wire.div_(worldSize_);
  const int64_t receiveNumel = std::max(worldSize_ * maxRunNumel_, maxChunkNumel_);
  if (!freeReceive_.empty() && io_.beforeReuse) {
    io_.beforeReuse();
  }
  p.receivedBase = takeBuffer(freeReceive_, receiveNumel, p.wire.options());
  if (p.padded) {
    p.received = p.receivedBase.narrow(0, 0, b.evenChunk());
    p.timing = comms::PendingComm::start(commsLog_, comms::kReduceScatterTensor, p.wire);
    p.work = compat::reduceScatterTensor(*pg_, p.received, p.wire);
    return;
  }
  p.inCounts = b.rankNumels;
  p.outCounts.assign(static_cast<size_t>(worldSize_), b.rankNumels[static_cast<size_t>(rank_)]);
  p.received = p.receivedBase.narrow(0, 0, worldSize_ * b.rankNumels[static_cast<size_t>(rank_)]);
  // Gloo has no reduce-scatter, so it travels as an alltoall; it is logged as the collective it is.
  p.timing = comms::PendingComm::start(commsLog_, comms::kReduceScatterTensor, p.wire);
  p.work = compat::allToAllSingle(*pg_, p.received, p.wire, p.outCounts, p.inCounts);
}

bool BucketReducer::completeOldest() {
  if (inFlight_.empty()) {
    return false;
  }
  Pending p = std::move(inFlight_.front());
  inFlight_.pop_front();
  if (p.work) {
    EngineTimers::MaybeScope waiting(timers_, EngineTimers::kReduceScatter);
    p.work->wait();
    p.timing.waited();
  }
  EngineTimers::MaybeScope copying(timers_, EngineTimers::kGradCopy);
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
  } else if (p.padded) {
    averaged = p.received.narrow(0, 0, run);  // summed by the collective; the padding after it is zeros
  } else {
    // Row r holds rank r's copy (already divided); summing rows in rank order makes every world
    // size's sum deterministic. Written where the owner wants it, or into the recycled sum buffer.
    at::Tensor out = io_.output ? io_.output(p.bucket) : at::Tensor();
    if (!out.defined() || out.numel() != run || !out.is_contiguous() || out.dtype() != p.received.dtype() ||
        out.device() != p.received.device()) {
      if (!sum_.defined() || sum_.dtype() != p.received.dtype() || sum_.device() != p.received.device()) {
        sum_ = at::empty({maxRunNumel_}, p.received.options());
      } else if (io_.beforeReuse) {
        io_.beforeReuse();
      }
      out = sum_.narrow(0, 0, run);
    }
    if (run > 0) {
      const int64_t rows = 0;
      at::sum_out(out, p.received.view({worldSize_, run}), at::IntArrayRef(rows));
    }
    averaged = out;
  }
  io_.deliver(p.bucket, averaged);
  if (p.receivedBase.defined()) {
    freeReceive_.push_back(std::move(p.receivedBase));
  }
  if (p.wireBase.defined()) {
    freeWire_.push_back(std::move(p.wireBase));
  }
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
