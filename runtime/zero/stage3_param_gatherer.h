#pragma once
// Carries out ZeRO-3 parameter gathers (planGather) asynchronously and, when one completes, installs
// each parameter's full tensor with set_data (the parameter keeps its TensorImpl, autograd metadata and
// version counter). On Gloo with host memory every piece is sent straight from its owner's partition and
// received straight into the new full tensor (no packing, padding or unpacking copy: on 4 x Linear(1024),
// 2 ranks, 48 instead of 66 CPU ms per step, README "ZeRO stages"); elsewhere this rank's pieces are
// packed and padded into one all-gather of equal-size pieces. release() installs an empty tensor.
// offload_param on an accelerator (the partition in host memory, the parameters on the device): the packing
// copies go up on a side stream when the gather is launched, which for a prefetch is while the module
// before it computes; the all-gather follows them on the device and the compute stream waits for them only
// when the gather is completed, i.e. when its module is about to run (SideStreamCopies). No host wait.
// Tracks each parameter's state (released, in flight, gathered). Not thread-safe; collective: every
// rank launches the same gathers in the same order.

#include "runtime/comms/pending_comm.h"
#include "runtime/engine_timers.h"
#include "runtime/zero/partition_plan.h"
#include "runtime/zero/side_stream_copies.h"
#include "runtime/zero/stage3_gather_plan.h"

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace c10d {
class ProcessGroup;
class Work;
}  // namespace c10d

namespace dsrt::zero {

class Stage3ParamGatherer {
 public:
  enum class State { kReleased, kInFlight, kGathered };

  /// `params`: the model's parameters (plan order, one dtype and device: where gathers put them);
  /// `shapes`: their full shapes; `partition`: this rank's partition (plan.partitionNumel elements of
  /// the parameters' dtype, on their device or in host memory with offload_param), read at launch. Every parameter
  /// starts kGathered (construction does not touch their data).
  Stage3ParamGatherer(c10::intrusive_ptr<c10d::ProcessGroup> pg, int rank, const PartitionPlan& plan,
                      std::vector<at::Tensor> params, std::vector<std::vector<int64_t>> shapes, at::Tensor partition);
  ~Stage3ParamGatherer();  ///< waits for gathers and uploads in flight (never leaves a transfer on freed buffers)
  Stage3ParamGatherer(const Stage3ParamGatherer&) = delete;
  Stage3ParamGatherer& operator=(const Stage3ParamGatherer&) = delete;

  State state(int64_t param) const { return state_[static_cast<size_t>(param)]; }
  /// Launches one all-gather of those of `params` that are kReleased (none: nothing is sent, -1).
  /// Returns the gather's sequence number.
  int64_t launch(const std::vector<int64_t>& params);
  /// Makes `params` kGathered: completes the gathers in flight that hold them (and those launched
  /// before them), then gathers the released ones synchronously.
  void fetch(const std::vector<int64_t>& params);
  /// Completes every gather in flight.
  void completeAll();
  /// Installs an empty tensor as `param`'s data (kGathered only; others are left alone).
  void release(int64_t param);
  /// Gathers `params` again even if kGathered (after their partition changed). Blocks.
  void refresh(const std::vector<int64_t>& params);
  /// Blocks until no upload still reads the host partition: call before the host rewrites it (the CPU
  /// optimizer step, a load). Nothing to wait for without uploads or when none was issued since.
  void awaitPartitionReads();
  /// Tests: upload a host partition through these streams as on an accelerator (packed gathers, the
  /// copies on `upload`), for a CPU model. Call before the first launch; the streams outlive this object.
  void useUploadStreams(PipelineStream* compute, PipelineStream* upload);

  /// wall_clock_breakdown: waits go to kParamGather, packing and installing to kParamCopy (null: untimed).
  void setTimers(EngineTimers* timers) { timers_ = timers; }
  /// comms_logger: each gather is recorded as one all_gather_into_tensor of this rank's (padded) pieces,
  /// as DeepSpeed's allgather_fn of a partition; null records nothing.
  void setCommsLog(std::shared_ptr<comms::CommsLog> log) { commsLog_ = std::move(log); }

  int64_t launches() const { return launches_; }          ///< all-gathers launched so far
  int64_t gatheredNumel() const { return gatheredNumel_; }  ///< parameter elements gathered so far

 private:
  struct Pending {
    GatherPlan plan;
    c10::intrusive_ptr<c10d::Work> work;  ///< the allgather (not Gloo); null for one rank
    std::vector<c10::intrusive_ptr<c10d::Work>> exchange;  ///< Gloo: the point-to-point sends and receives
    at::Tensor send;                      ///< this rank's piece (kept alive until completion)
    at::Tensor recv;                      ///< worldSize pieces, rank order
    at::Tensor sendBase, recvBase;        ///< the (possibly larger) recycled buffers send/recv view
    std::vector<at::Tensor> full;         ///< direct exchange: per plan.params entry, the tensor received into
    int64_t seq = 0;
    comms::PendingComm timing;            ///< comms_logger record of the gather
    std::shared_ptr<PipelineEvent> uploaded;  ///< offload_param: after the copies that packed `send`
  };
  /// Gloo, host memory: each piece travels straight from its owner's partition into the parameter's new
  /// full tensor (one message per piece and peer; no packing, padding or unpacking copies).
  bool launchDirect(Pending& g);
  /// Everywhere else: packs this rank's pieces, padded to the largest rank's, for one all-gather (Gloo:
  /// a point-to-point exchange into a recycled receive buffer) and unpacks them on completion.
  void launchPacked(Pending& g);
  /// Packs this rank's pieces into g.send: on the compute stream, or uploaded on the side stream.
  void pack(Pending& g);
  /// Posts the all-gather of g.send into g.recv (world > 1).
  void postAllgather(Pending& g);
  void complete();  ///< completes the oldest pending gather and installs its parameters
  /// A buffer of at least `numel` elements like the parameters, from the spares when one is large
  /// enough (the wire buffers of every gather are about one layer in size: recycling them keeps the heap
  /// from fragmenting on a fresh allocation per layer and step).
  at::Tensor wireBuffer(int64_t numel);
  void recycle(at::Tensor buffer);

  c10::intrusive_ptr<c10d::ProcessGroup> pg_;
  int rank_;
  const PartitionPlan& plan_;
  std::vector<at::Tensor> params_;
  std::vector<std::vector<int64_t>> shapes_;
  at::Tensor partition_;
  std::vector<State> state_;
  std::vector<int64_t> pendingSeq_;  ///< per parameter: seq of the gather carrying it
  std::deque<Pending> pending_;      ///< launch order
  std::vector<at::Tensor> spares_;   ///< recycled send/recv buffers (at most kMaxSpares)
  /// A host partition of a model on an accelerator: where the packing copies run. Declared after the
  /// buffers, so it is destroyed (and waits for its copies) first.
  std::unique_ptr<SideStreamCopies> uploads_;
  EngineTimers* timers_ = nullptr;
  std::shared_ptr<comms::CommsLog> commsLog_;
  int64_t nextSeq_ = 0;
  int64_t launches_ = 0;
  int64_t gatheredNumel_ = 0;
};

}  // namespace dsrt::zero
