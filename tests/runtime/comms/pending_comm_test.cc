// runtime/comms: what PendingComm records for real Gloo collectives on two ranks (threads), and what it
// records with the log off or the op not wanted (nothing).
#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

// After the torch headers: Catch's CHECK must replace glog's.
#include <catch2/catch.hpp>

#include "runtime/comms/pending_comm.h"
#include "tests/runtime/core/thread_world.h"

using dsrt::comms::CommRecord;
using dsrt::comms::CommsLog;
using dsrt::comms::PendingComm;
using dsrt::testing::runThreadWorld;

namespace {

/// Each rank: an async allreduce of 256 floats timed through its work's future, a send/recv pair (no
/// future) timed by waited(), and a broadcast the log does not want or cannot see.
std::vector<std::vector<CommRecord>> runRanks(bool enabled, bool profAll, std::vector<std::string> profOps) {
  std::vector<std::vector<CommRecord>> got(2);
  runThreadWorld(2, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    auto log = std::make_shared<CommsLog>();
    log->configure(enabled, profAll, profOps);
    at::Tensor t = at::ones({256});
    std::vector<at::Tensor> one{t};
    PendingComm reduce = PendingComm::start(log, dsrt::comms::kAllReduce, t);
    auto work = pg->allreduce(one);
    reduce.watch(work);
    work->wait();
    reduce.waited();  // the callback already recorded it: not twice
    RANK_REQUIRE(t[0].item<float>() == 2.0f, "allreduce result " << t[0].item<float>());

    at::Tensor piece = at::zeros({10}, at::kDouble);
    std::vector<at::Tensor> p2p{piece};
    PendingComm gather = PendingComm::start(log, dsrt::comms::kAllGatherIntoTensor, piece);
    auto exchange = rank == 0 ? pg->send(p2p, 1, 7) : pg->recv(p2p, 0, 7);
    gather.watch(exchange);
    exchange->wait();
    gather.waited();

    PendingComm none = PendingComm::start(nullptr, dsrt::comms::kBroadcast, t);  // no log: nothing
    pg->broadcast(one)->wait();
    none.waited();
    got[static_cast<size_t>(rank)] = log->take();
    RANK_REQUIRE(log->take().empty(), "take() keeps records");
  });
  return got;
}

}  // namespace

// One TEST_CASE with sections: each case is a process, and LibTorch costs about a second to start.
TEST_CASE("PendingComm records each wanted collective once, with its input bytes and a latency, and nothing "
          "when the log is off",
          "[runtime][comms][gloo]") {
  SECTION("enabled, prof_all: the allreduce (timed by its future) and the point-to-point exchange (by waited)") {
    for (const auto& records : runRanks(true, true, {})) {
      REQUIRE(records.size() == 2);
      CHECK(records[0].op == "all_reduce");
      CHECK(records[0].bytes == 256 * 4);
      CHECK(records[1].op == "all_gather_into_tensor");
      CHECK(records[1].bytes == 10 * 8);
      for (const auto& r : records) {
        CHECK(r.latencyMs > 0.0);
      }
    }
  }
  SECTION("prof_all false: only the ops named in prof_ops") {
    for (const auto& records : runRanks(true, false, {"all_gather_into_tensor"})) {
      REQUIRE(records.size() == 1);
      CHECK(records[0].op == "all_gather_into_tensor");
    }
  }
  SECTION("disabled: nothing, whatever prof_all says") {
    for (const auto& records : runRanks(false, true, {"all_reduce"})) {
      CHECK(records.empty());
    }
  }
}
