#pragma once
// After each rank updated its own partition of the flat parameters, make every rank's buffer whole
// again: all-gather the partitions in shards of about allgather_bucket_size elements (DeepSpeed's
// all_gather_dp_groups sharding). Gloo in torch 1.13 has no _allgather_base and its allgather allocates
// and copies out a worldSize x shard buffer per call, so on Gloo each shard is exchanged with point-to-
// point send/recv straight between the ranks' flat buffers (no allocation, no copy); other backends
// (NCCL) get an allgather over a list of per-rank views.

#include "runtime/comms/pending_comm.h"
#include "runtime/zero/collective_choice.h"
#include "runtime/zero/partition_plan.h"

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace c10d {
class ProcessGroup;
class Work;
}  // namespace c10d

namespace dsrt::zero {

/// True where allgatherPartitions and the stage-3 gathers use postRowExchange (Gloo on host memory,
/// chooseFlatCollective) instead of the process group's allgather.
bool exchangesPointToPoint(const c10d::ProcessGroup& pg, c10::DeviceType device = c10::DeviceType::CPU);

/// Point-to-point all-gather of `rows` (worldSize contiguous tensors, one per rank; row `rank` already
/// holds this rank's data): posts a send of row `rank` to every other rank and a receive of every other
/// row straight into it, all tagged `tag` (equal on all ranks for one exchange, distinct between
/// exchanges in flight at once). Returns the works to wait for; `rows` must stay alive until then.
std::vector<c10::intrusive_ptr<c10d::Work>> postRowExchange(c10d::ProcessGroup& pg, int rank,
                                                            const std::vector<at::Tensor>& rows, int tag);

/// The all-gather of allgatherPartitions, posted shard by shard (on NCCL one in-place _allgather_base) as this rank's partition becomes current,
/// so the exchange of the front of the partition overlaps the optimizer computing the rest (the same
/// shards, so the same number of collectives). Collective: every rank posts the same shards in order.
/// Not thread-safe; `flat` must stay alive and its other ranks' partitions untouched until wait().
class ShardedAllgather {
 public:
  /// `flat` and `bucketNumel` as allgatherPartitions; nothing is posted yet.
  ShardedAllgather(c10::intrusive_ptr<c10d::ProcessGroup> pg, int rank, const PartitionPlan& plan, at::Tensor flat,
                   int64_t bucketNumel);
  /// Waits for whatever is in flight (errors swallowed: the owner is already failing).
  ~ShardedAllgather();
  ShardedAllgather(const ShardedAllgather&) = delete;
  ShardedAllgather& operator=(const ShardedAllgather&) = delete;

  /// End of every shard in partition coordinates, increasing (the last is plan.partitionNumel); empty
  /// when there is nothing to exchange (one rank or an empty partition).
  const std::vector<int64_t>& shardEnds() const { return shardEnds_; }
  /// comms_logger: each shard is recorded as one all_gather_into_tensor of this rank's piece (null: none).
  void setCommsLog(std::shared_ptr<comms::CommsLog> log) { commsLog_ = std::move(log); }
  /// This rank's partition is final in [0, ready): posts every shard inside it not yet posted.
  void postUpTo(int64_t ready);
  /// Posts what is left and waits for every shard. Throws c10::Error on a failed collective.
  void wait();

 private:
  c10::intrusive_ptr<c10d::ProcessGroup> pg_;
  int rank_;
  const PartitionPlan& plan_;
  at::Tensor flat_;
  /// How shards travel; kFlatBase makes the whole partition one shard, gathered in place.
  FlatCollective collective_;
  std::vector<int64_t> shardEnds_;
  size_t posted_ = 0;  ///< shards [0, posted_) are in flight or done
  std::vector<c10::intrusive_ptr<c10d::Work>> works_;
  std::shared_ptr<comms::CommsLog> commsLog_;
  /// Per posted shard: its timing and the end of its works in works_ (a point-to-point shard has several).
  std::vector<std::pair<comms::PendingComm, size_t>> shardTimings_;
};

/// Collective: every rank calls it with its own `flat` (plan.paddedNumel elements) whose partition
/// `rank` is current; afterwards all partitions are. `bucketNumel` caps the elements per collective
/// summed over ranks (at least one element per rank). Blocks until done; throws c10::Error.
void allgatherPartitions(const c10::intrusive_ptr<c10d::ProcessGroup>& pg, int rank, const PartitionPlan& plan,
                         const at::Tensor& flat, int64_t bucketNumel,
                         const std::shared_ptr<comms::CommsLog>& commsLog = nullptr);

}  // namespace dsrt::zero
