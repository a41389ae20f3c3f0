#include "runtime/zero/param_allgather.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <algorithm>
#include <exception>
#include <utility>
#include <vector>

#include "runtime/compat/allgather_into_tensor.h"

namespace dsrt::zero {

namespace {

// Tags of the exchange's point-to-point messages: Gloo's collectives use slots with a non-zero prefix
// byte above bit 56, so no 32-bit tag collides with them; this base keeps clear of small user tags.
constexpr int kExchangeTagBase = 0x5a300000;

}  // namespace

bool exchangesPointToPoint(const c10d::ProcessGroup& pg, c10::DeviceType device) {
  return chooseFlatCollective(pg.getBackendName(), device) == FlatCollective::kPointToPoint;
}

std::vector<c10::intrusive_ptr<c10d::Work>> postRowExchange(c10d::ProcessGroup& pg, int rank,
                                                            const std::vector<at::Tensor>& rows, int tag) {
  const auto world = static_cast<int>(rows.size());
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  for (int step = 1; step < world; ++step) {
    // Peers in ring order from this rank, so the first transfers of all ranks pair up.
    const int to = (rank + step) % world;
    const int from = (rank - step + world) % world;
    std::vector<at::Tensor> recv{rows[static_cast<size_t>(from)]};
    works.push_back(pg.recv(recv, from, tag));
    std::vector<at::Tensor> send{rows[static_cast<size_t>(rank)]};
    works.push_back(pg.send(send, to, tag));
  }
  return works;
}

ShardedAllgather::ShardedAllgather(c10::intrusive_ptr<c10d::ProcessGroup> pg, int rank, const PartitionPlan& plan,
                                   at::Tensor flat, int64_t bucketNumel)
    : pg_(std::move(pg)),
      rank_(rank),
      plan_(plan),
      flat_(std::move(flat)),
      collective_(chooseFlatCollective(pg_->getBackendName(), flat_.device().type())) {
  TORCH_CHECK(flat_.numel() == plan_.paddedNumel, "zero: all-gather buffer has ", flat_.numel(),
              " elements, expected '", plan_.paddedNumel, "'");
  if (plan_.worldSize == 1 || plan_.partitionNumel == 0) {
    return;
  }
  TORCH_CHECK(bucketNumel >= 1, "zero_optimization.allgather_bucket_size must be >= 1, got '", bucketNumel, "'");
  // NCCL gathers the whole flat buffer in one kernel; its optimizer step is too short to overlap with.
  const int64_t shard = collective_ == FlatCollective::kFlatBase ? plan_.partitionNumel
                                                                 : std::max<int64_t>(1, bucketNumel / plan_.worldSize);
  for (int64_t off = 0; off < plan_.partitionNumel; off += shard) {
    shardEnds_.push_back(std::min(plan_.partitionNumel, off + shard));
  }
}

ShardedAllgather::~ShardedAllgather() {
  // Never leave a transfer reading or writing buffers that may be freed next.
  for (auto& w : works_) {
    try {
      w->wait();
    } catch (const std::exception&) {  // already failing; a destructor must not throw
    }
  }
}

void ShardedAllgather::postUpTo(int64_t ready) {
  for (; posted_ < shardEnds_.size() && shardEnds_[posted_] <= ready; ++posted_) {
    const int64_t off = posted_ == 0 ? 0 : shardEnds_[posted_ - 1];
    const int64_t n = shardEnds_[posted_] - off;
    std::vector<at::Tensor> rows;
    for (int r = 0; r < plan_.worldSize; ++r) {
      rows.push_back(flat_.narrow(0, plan_.partitionBegin(r) + off, n));
    }
    comms::PendingComm timing =
        comms::PendingComm::start(commsLog_, comms::kAllGatherIntoTensor, rows[static_cast<size_t>(rank_)]);
    const size_t firstWork = works_.size();
    if (collective_ == FlatCollective::kFlatBase) {
      // Partitions lie back to back (partitionBegin(r) = r * partitionNumel): an in-place gather.
      at::Tensor all = flat_.narrow(0, 0, plan_.partitionNumel * plan_.worldSize);
      at::Tensor mine = rows[static_cast<size_t>(rank_)];
      works_.push_back(compat::allgatherIntoTensor(*pg_, all, mine));
    } else if (collective_ == FlatCollective::kPointToPoint) {
      // Gloo: every rank sends its shard straight from the flat buffer to every other rank and receives
      // theirs straight into it (unbound buffers, no copy). ProcessGroupGloo's allgather would allocate a
      // worldSize x shard output every call and copy it out again: the page faults of that per-step
      // allocation cost more than the transfer here (docs/zero.md, "Step time").
      for (auto& w : postRowExchange(*pg_, rank_, rows, kExchangeTagBase + static_cast<int>(posted_))) {
        works_.push_back(std::move(w));
      }
    } else {
      // Other backends run collectives in order on their own streams/threads.
      std::vector<std::vector<at::Tensor>> outputs{rows};
      std::vector<at::Tensor> inputs{rows[static_cast<size_t>(rank_)]};
      works_.push_back(pg_->allgather(outputs, inputs));
    }
    // A point-to-point shard is several sends and receives with no future: wait() times it once all are done.
    if (works_.size() == firstWork + 1) {
      timing.watch(works_.back());
    }
    shardTimings_.emplace_back(std::move(timing), works_.size());
  }
}

void ShardedAllgather::wait() {
  postUpTo(plan_.partitionNumel);
  size_t shard = 0;
  for (size_t i = 0; i < works_.size(); ++i) {
    works_[i]->wait();
    for (; shard < shardTimings_.size() && shardTimings_[shard].second == i + 1; ++shard) {
      shardTimings_[shard].first.waited();
    }
  }
  works_.clear();
  shardTimings_.clear();
}

void allgatherPartitions(const c10::intrusive_ptr<c10d::ProcessGroup>& pg, int rank, const PartitionPlan& plan,
                         const at::Tensor& flat, int64_t bucketNumel,
                         const std::shared_ptr<comms::CommsLog>& commsLog) {
  ShardedAllgather gather(pg, rank, plan, flat, bucketNumel);
  gather.setCommsLog(commsLog);
  gather.wait();
}

}  // namespace dsrt::zero
