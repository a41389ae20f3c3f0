#include "runtime/zero/stage3_param_gatherer.h"

#include "runtime/compat/allgather_into_tensor.h"
#include "runtime/zero/param_allgather.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <algorithm>
#include <exception>

namespace dsrt::zero {

namespace {
// Tags of the stage-3 gathers' point-to-point exchange (clear of allgatherPartitions' 0x5a300000 + shard).
constexpr int kGatherTagBase = 0x5a400000;
constexpr int64_t kGatherTags = 1 << 16;
// The direct exchange tags every piece: kDirectTagBase + (seq % kDirectGathers) * kDirectPieces + piece index
// (per owner rank). A gather with more pieces on one rank takes the packed path.
constexpr int kDirectTagBase = 0x5a500000;
constexpr int64_t kDirectGathers = 1 << 12;
constexpr int64_t kDirectPieces = 1 << 8;

// An all-gather only copies bytes: Gloo has no bf16, so bf16 travels as fp16 bit patterns.
at::Tensor wireView(const at::Tensor& t) { return t.scalar_type() == at::kBFloat16 ? t.view(at::kHalf) : t; }
}  // namespace

Stage3ParamGatherer::Stage3ParamGatherer(c10::intrusive_ptr<c10d::ProcessGroup> pg, int rank,
                                         const PartitionPlan& plan, std::vector<at::Tensor> params,
                                         std::vector<std::vector<int64_t>> shapes, at::Tensor partition)
    : pg_(std::move(pg)),
      rank_(rank),
      plan_(plan),
      params_(std::move(params)),
      shapes_(std::move(shapes)),
      partition_(std::move(partition)),
      state_(params_.size(), State::kGathered),
      pendingSeq_(params_.size(), -1) {
  TORCH_CHECK(partition_.numel() == plan_.partitionNumel, "zero stage 3: partition has ", partition_.numel(),
              " elements, expected '", plan_.partitionNumel, "'");
  const c10::Device device = params_.front().device();
  if (partition_.device().is_cpu() && !device.is_cpu()) {
    uploads_ = std::make_unique<SideStreamCopies>(device);
  }
}

void Stage3ParamGatherer::useUploadStreams(PipelineStream* compute, PipelineStream* upload) {
  TORCH_INTERNAL_ASSERT(pending_.empty(), "zero stage 3: upload streams set with gathers in flight");
  uploads_ = std::make_unique<SideStreamCopies>(compute, upload);
}

void Stage3ParamGatherer::awaitPartitionReads() {
  if (uploads_) {
    uploads_->hostWaitsAll();
  }
}

Stage3ParamGatherer::~Stage3ParamGatherer() {
  for (auto& p : pending_) {
    try {
      if (p.work) {
        p.work->wait();
      }
      for (auto& w : p.exchange) {
        w->wait();
      }
    } catch (const std::exception&) {  // already failing; a destructor must not throw
    }
  }
}

int64_t Stage3ParamGatherer::launch(const std::vector<int64_t>& params) {
  std::vector<int64_t> wanted;
  for (int64_t p : params) {
    if (state_[static_cast<size_t>(p)] == State::kReleased) {
      wanted.push_back(p);
    }
  }
  if (wanted.empty()) {
    return -1;
  }
  c10::AutoGradMode noGrad(false);
  EngineTimers::MaybeScope timed(timers_, EngineTimers::kParamCopy);
  Pending g;
  g.plan = planGather(plan_, std::move(wanted));
  g.seq = nextSeq_++;
  if (plan_.worldSize > 1) {
    const at::Tensor& like = params_.front();
    g.timing = comms::PendingComm::start(commsLog_, comms::kAllGatherIntoTensor,
                                         g.plan.pieceNumel * static_cast<int64_t>(like.element_size()),
                                         like.device().is_cpu());
  }
  if (!launchDirect(g)) {
    launchPacked(g);
  }
  g.timing.watch(g.work);
  for (int64_t p : g.plan.params) {
    state_[static_cast<size_t>(p)] = State::kInFlight;
    pendingSeq_[static_cast<size_t>(p)] = g.seq;
  }
  ++launches_;
  gatheredNumel_ += g.plan.numel;
  pending_.push_back(std::move(g));
  return nextSeq_ - 1;
}

bool Stage3ParamGatherer::launchDirect(Pending& g) {
  const int world = plan_.worldSize;
  const at::TensorOptions options = params_.front().options();
  if (world == 1 || uploads_ || !exchangesPointToPoint(*pg_) || !partition_.device().is_cpu() ||
      !options.device().is_cpu()) {
    return false;
  }
  for (const auto& pieces : g.plan.pieces) {
    if (static_cast<int64_t>(pieces.size()) > kDirectPieces) {
      return false;
    }
  }
  g.full.reserve(g.plan.params.size());
  for (int64_t p : g.plan.params) {
    g.full.push_back(at::empty({plan_.paramNumels[static_cast<size_t>(p)]}, options));
  }
  auto fullOf = [&](int64_t param) -> at::Tensor& {
    auto it = std::lower_bound(g.plan.params.begin(), g.plan.params.end(), param);
    return g.full[static_cast<size_t>(it - g.plan.params.begin())];
  };
  const int tagBase = kDirectTagBase + static_cast<int>((g.seq % kDirectGathers) * kDirectPieces);
  for (int r = 0; r < world; ++r) {
    const auto& pieces = g.plan.pieces[static_cast<size_t>(r)];
    for (size_t k = 0; k < pieces.size(); ++k) {
      const GatherPiece& piece = pieces[k];
      at::Tensor dst = fullOf(piece.param).narrow(0, piece.paramOffset, piece.numel);
      const int tag = tagBase + static_cast<int>(k);
      if (r != rank_) {
        std::vector<at::Tensor> recv{wireView(dst)};
        g.exchange.push_back(pg_->recv(recv, r, tag));
        continue;
      }
      at::Tensor src = partition_.narrow(0, piece.partitionOffset, piece.numel);
      dst.copy_(src);
      for (int step = 1; step < world; ++step) {
        std::vector<at::Tensor> send{wireView(src)};
        g.exchange.push_back(pg_->send(send, (rank_ + step) % world, tag));
      }
    }
  }
  return true;
}

void Stage3ParamGatherer::launchPacked(Pending& g) {
  const int world = plan_.worldSize;
  g.sendBase = wireBuffer(g.plan.pieceNumel);  // on the model's device
  g.send = g.sendBase.narrow(0, 0, g.plan.pieceNumel);
  pack(g);
  if (world == 1) {
    g.recv = g.send;
    return;
  }
  g.recvBase = wireBuffer(world * g.plan.pieceNumel);
  g.recv = g.recvBase.narrow(0, 0, world * g.plan.pieceNumel);
  if (uploads_) {
    // Issued with the side stream current: the collective's stream waits for the uploads, the compute
    // stream does not (DeepSpeed gathers on its allgather stream the same way).
    uploads_->launchAfterCopies([&] { postAllgather(g); });
  } else {
    postAllgather(g);
  }
}

void Stage3ParamGatherer::pack(Pending& g) {
  const std::vector<GatherPiece>& pieces = g.plan.pieces[static_cast<size_t>(rank_)];
  if (!uploads_) {
    g.send.zero_();  // padding of short pieces
    for (const GatherPiece& piece : pieces) {
      g.send.narrow(0, piece.pieceOffset, piece.numel).copy_(partition_.narrow(0, piece.partitionOffset, piece.numel));
    }
    return;
  }
  // The same copies from host memory, non-blocking on the side stream (asynchronous only from page-locked
  // memory: offload_param.pin_memory). issue() orders them after the compute work enqueued so far, which
  // is the last reader of the recycled send buffer.
  g.uploaded = uploads_->issue([send = g.send, partition = partition_, pieces] {
    c10::AutoGradMode noGrad(false);
    send.zero_();
    for (const GatherPiece& piece : pieces) {
      send.narrow(0, piece.pieceOffset, piece.numel)
          .copy_(partition.narrow(0, piece.partitionOffset, piece.numel), /*non_blocking=*/true);
    }
  });
}

void Stage3ParamGatherer::postAllgather(Pending& g) {
  const int world = plan_.worldSize;
  // An all-gather only copies bytes: Gloo has no bf16, so bf16 travels as fp16 bit patterns.
  const auto wire = wireView;
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int r = 0; r < world; ++r) {
    outputs[0].push_back(wire(g.recv.narrow(0, r * g.plan.pieceNumel, g.plan.pieceNumel)));
  }
  const FlatCollective how = chooseFlatCollective(pg_->getBackendName(), g.recv.device().type());
  if (how == FlatCollective::kPointToPoint) {
    // Gloo's allgather allocates and copies out a worldSize x piece buffer per gather; the exchange
    // receives straight into the recycled recv buffer. Sequence numbers agree across ranks (gathers are
    // issued in the same order everywhere), so they tell the gathers in flight apart.
    outputs[0][static_cast<size_t>(rank_)].copy_(wire(g.send));
    g.exchange = postRowExchange(*pg_, rank_, outputs[0], kGatherTagBase + static_cast<int>(g.seq % kGatherTags));
  } else if (how == FlatCollective::kFlatBase) {
    // NCCL: the recv buffer is already the contiguous worldSize x piece layout _allgather_base fills.
    at::Tensor out = wire(g.recv);
    at::Tensor in = wire(g.send);
    g.work = compat::allgatherIntoTensor(*pg_, out, in);
  } else {
    std::vector<at::Tensor> inputs{wire(g.send)};
    g.work = pg_->allgather(outputs, inputs);
  }
}

void Stage3ParamGatherer::complete() {
  Pending g = std::move(pending_.front());
  pending_.pop_front();
  {
    EngineTimers::MaybeScope waiting(timers_, EngineTimers::kParamGather);
    if (g.work) {
      g.work->wait();
    }
    for (auto& w : g.exchange) {
      w->wait();
    }
    g.timing.waited();
    if (g.uploaded) {
      uploads_->computeWaits(*g.uploaded);  // the module about to run is the first to need the copies
    }
  }
  EngineTimers::MaybeScope copying(timers_, EngineTimers::kParamCopy);
  c10::AutoGradMode noGrad(false);
  std::vector<at::Tensor> full = std::move(g.full);  // direct exchange: received in place
  if (full.empty()) {
    full.resize(g.plan.params.size());
  }
  auto slot = [&](int64_t param) -> at::Tensor& {
    auto it = std::lower_bound(g.plan.params.begin(), g.plan.params.end(), param);
    at::Tensor& t = full[static_cast<size_t>(it - g.plan.params.begin())];
    if (!t.defined()) {
      t = at::empty({plan_.paramNumels[static_cast<size_t>(param)]}, g.send.options());
    }
    return t;
  };
  for (int r = 0; r < plan_.worldSize && g.recv.defined(); ++r) {
    at::Tensor row = g.recv.narrow(0, r * g.plan.pieceNumel, g.plan.pieceNumel);
    for (const GatherPiece& piece : g.plan.pieces[static_cast<size_t>(r)]) {
      slot(piece.param).narrow(0, piece.paramOffset, piece.numel).copy_(row.narrow(0, piece.pieceOffset, piece.numel));
    }
  }
  for (size_t i = 0; i < g.plan.params.size(); ++i) {
    const auto p = static_cast<size_t>(g.plan.params[i]);
    at::Tensor data = full[i].defined() ? full[i] : at::empty({0}, g.send.options());  // zero-element param
    params_[p].set_data(data.view(shapes_[p]));
    state_[p] = State::kGathered;
    pendingSeq_[p] = -1;
  }
  g.send = at::Tensor();
  g.recv = at::Tensor();
  recycle(std::move(g.sendBase));
  recycle(std::move(g.recvBase));  // undefined for one rank (recv was send)
}

namespace {
constexpr size_t kMaxSpares = 4;  // two gathers in flight (one used, one prefetched), each send + recv
}  // namespace

at::Tensor Stage3ParamGatherer::wireBuffer(int64_t numel) {
  for (size_t i = 0; i < spares_.size(); ++i) {
    if (spares_[i].numel() >= numel) {
      at::Tensor t = std::move(spares_[i]);
      spares_.erase(spares_.begin() + static_cast<std::ptrdiff_t>(i));
      return t;
    }
  }
  return at::empty({numel}, params_.front().options());
}

void Stage3ParamGatherer::recycle(at::Tensor buffer) {
  if (!buffer.defined()) return;
  at::Tensor base = std::move(buffer);
  if (spares_.size() < kMaxSpares) {
    spares_.push_back(std::move(base));
  } else {
    // Replace the smallest spare if this one is larger: large gathers are the ones worth keeping.
    auto smallest = std::min_element(spares_.begin(), spares_.end(),
                                     [](const at::Tensor& a, const at::Tensor& b) { return a.numel() < b.numel(); });
    if (smallest->numel() < base.numel()) *smallest = std::move(base);
  }
}

void Stage3ParamGatherer::fetch(const std::vector<int64_t>& params) {
  int64_t last = -1;
  for (int64_t p : params) {
    last = std::max(last, pendingSeq_[static_cast<size_t>(p)]);
  }
  last = std::max(last, launch(params));
  // Gathers complete in launch order; prefetches launched after `last` stay in flight.
  while (!pending_.empty() && pending_.front().seq <= last) {
    complete();
  }
}

void Stage3ParamGatherer::completeAll() {
  while (!pending_.empty()) {
    complete();
  }
}

void Stage3ParamGatherer::release(int64_t param) {
  const auto p = static_cast<size_t>(param);
  if (state_[p] != State::kGathered) {
    return;
  }
  c10::AutoGradMode noGrad(false);
  params_[p].set_data(at::empty({0}, params_[p].options()));
  state_[p] = State::kReleased;
}

void Stage3ParamGatherer::refresh(const std::vector<int64_t>& params) {
  completeAll();
  for (int64_t p : params) {
    state_[static_cast<size_t>(p)] = State::kReleased;  // the old data is replaced, not freed first
  }
  fetch(params);
}

}  // namespace dsrt::zero
