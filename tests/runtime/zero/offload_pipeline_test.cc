// The offload pipeline (runtime/zero/offload_pipeline.h) on fake streams that run their work only when
// something waits for it: the order of copies, host waits and optimizer pieces, the piece plan, and
// MasterPartition's pipelined step on CPU tensors equal to one plain optimizer step bit for bit.
#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/optim/device_adam_flat_optimizer.h"
#include "runtime/optim/flat_optimizer.h"
#include "runtime/zero/master_partition.h"
#include "runtime/zero/offload_pipeline.h"
#include "tests/runtime/zero/fake_pipeline_stream.h"

using dsrt::testing::FakePipelineStream;
using dsrt::zero::OffloadPieceOps;
using dsrt::zero::PipelineStreams;

namespace {

// Built by appending: GCC 12 at -O3 reports a false -Wrestrict for `"literal" + std::string&&` (an insert).
std::string range(int64_t begin, int64_t end) {
  std::string out = "[";
  out += std::to_string(begin);
  out += ",";
  out += std::to_string(end);
  out += ")";
  return out;
}

std::string logLine(const char* what, const std::string& detail) {
  std::string out = what;
  out += detail;
  return out;
}

/// Ops that only log what they do: copies when their stream runs them, the rest when the host does.
OffloadPieceOps loggingOps(std::vector<std::string>* log, bool download) {
  OffloadPieceOps ops;
  if (download) {
    ops.download = [log](int64_t b, int64_t e) { log->push_back(logLine("copy down ", range(b, e))); };
  }
  ops.prepare = [log](int64_t b, int64_t e) { log->push_back(logLine("prepare ", range(b, e))); };
  ops.step = [log](const std::vector<int64_t>& ends, const std::function<void(int64_t)>& stepped) {
    int64_t begin = 0;
    for (int64_t end : ends) {
      log->push_back(logLine("adam ", range(begin, end)));
      stepped(end);
      begin = end;
    }
  };
  ops.upload = [log](int64_t b, int64_t e) { log->push_back(logLine("copy up ", range(b, e))); };
  return ops;
}

}  // namespace

TEST_CASE("the offload pipeline downloads ahead, waits once per piece and uploads while the next piece steps",
          "[runtime][zero][offload]") {
  std::vector<std::string> log;
  FakePipelineStream compute("compute", &log);
  FakePipelineStream download("download", &log);
  FakePipelineStream upload("upload", &log);
  const PipelineStreams streams{&compute, &download, &upload};

  SECTION("the gradient on the device") {
    dsrt::zero::runOffloadPipeline({64, 128, 192}, loggingOps(&log, true), streams, {128, 192},
                                   [&](int64_t end) { log.push_back(logLine("reported ", std::to_string(end))); });
    compute.drain();
    const std::vector<std::string> expected{
        "host waits for upload",  // the previous step's uploads (nothing here)
        "upload waits for compute", "download waits for compute",
        "download enqueue", "download enqueue", "download enqueue",  // every download issued at once
        "host waits for download", "copy down [0,64)", "prepare [0,64)",
        "adam [0,64)", "upload enqueue",
        "host waits for download", "copy down [64,128)", "prepare [64,128)",
        "adam [64,128)", "upload enqueue", "compute waits for upload", "reported 128",
        "host waits for download", "copy down [128,192)", "prepare [128,192)",
        "adam [128,192)", "upload enqueue", "compute waits for upload", "reported 192",
        // the uploads ran only when the compute stream needed them: the host never waited for one
        "copy up [0,64)", "copy up [64,128)", "copy up [128,192)"};
    CHECK(log == expected);
  }
  SECTION("the gradient already in host memory (ZeRO-2/3 offload reduce into it)") {
    dsrt::zero::runOffloadPipeline({64, 128}, loggingOps(&log, false), streams, {128}, nullptr);
    compute.drain();
    const std::vector<std::string> expected{
        "host waits for upload", "upload waits for compute",
        "prepare [0,64)", "adam [0,64)", "upload enqueue",
        "prepare [64,128)", "adam [64,128)", "upload enqueue", "compute waits for upload",
        "copy up [0,64)", "copy up [64,128)"};
    CHECK(log == expected);
  }
  SECTION("nothing reported: the compute stream still waits for the last upload") {
    dsrt::zero::runOffloadPipeline({64, 100}, loggingOps(&log, false), streams, {}, nullptr);
    REQUIRE(log.size() >= 2);
    CHECK(log[log.size() - 2] == "upload enqueue");
    CHECK(log.back() == "compute waits for upload");
  }
  SECTION("an optimizer that skips a piece is a bug, not a silent partial step") {
    OffloadPieceOps ops = loggingOps(&log, false);
    ops.step = [](const std::vector<int64_t>& ends, const std::function<void(int64_t)>& stepped) {
      stepped(ends.front());
    };
    CHECK_THROWS_WITH(dsrt::zero::runOffloadPipeline({64, 128}, ops, streams, {}, nullptr),
                      Catch::Contains("stepped 1 of 2 pieces"));
  }
}

TEST_CASE("offload pieces cut every pieceNumel elements on aligned bounds and keep the caller's ends",
          "[runtime][zero][offload]") {
  using dsrt::zero::offloadPieceEnds;
  CHECK(offloadPieceEnds(1000, {1000}, 128, 64) == std::vector<int64_t>{128, 256, 384, 512, 640, 768, 896, 1000});
  CHECK(offloadPieceEnds(1000, {1000}, 100, 64) == std::vector<int64_t>{128, 256, 384, 512, 640, 768, 896, 1000});
  CHECK(offloadPieceEnds(1000, {320, 1000}, 256, 64) == std::vector<int64_t>{256, 320, 512, 768, 1000});
  CHECK(offloadPieceEnds(100, {100}, 4096, 64) == std::vector<int64_t>{100});
  CHECK(offloadPieceEnds(0, {0}, 64, 64) == std::vector<int64_t>{0});
  CHECK(offloadPieceEnds(256, {128, 128, 256}, 64, 64) == std::vector<int64_t>{64, 128, 192, 256});
  CHECK_THROWS_AS(offloadPieceEnds(100, {90}, 64, 64), std::invalid_argument);
  CHECK_THROWS_AS(offloadPieceEnds(100, {100}, 0, 64), std::invalid_argument);
  CHECK_THROWS_AS(offloadPieceEnds(100, {60, 50, 100}, 64, 64), std::invalid_argument);
}

TEST_CASE("MasterPartition's pipelined offload step equals one plain optimizer step bit for bit",
          "[runtime][zero][offload]") {
  const int64_t numel = 1000;  // not a multiple of the 64-element alignment: the last piece is short
  dsrt::optim::OptimizerSpec spec;
  spec.kind = dsrt::optim::OptimizerKind::kAdamW;
  spec.weightDecay = 0.01;
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16, at::kHalf}) {
    for (bool download : {true, false}) {
      for (double gradScale : {1.0, 0.25}) {
        INFO("dtype " << dtype << " download " << download << " gradScale " << gradScale);
        at::manual_seed(7);
        const at::Tensor initial = at::randn({numel}).to(dtype);
        // The reference: an fp32 master stepped whole by the same kind of optimizer.
        at::Tensor refMaster = initial.to(at::kFloat);
        at::Tensor refModel = initial.clone();
        auto refOptimizer = dsrt::optim::makeFlatOptimizer(spec, numel);

        at::Tensor model = initial.clone();
        dsrt::zero::MasterPartition master(model, /*offload=*/true, /*pinMemory=*/false);
        auto optimizer = dsrt::optim::makeFlatOptimizer(spec, numel);
        std::vector<std::string> log;
        FakePipelineStream compute("compute", &log);
        FakePipelineStream down("download", &log);
        FakePipelineStream up("upload", &log);
        master.usePipelineStreams(PipelineStreams{&compute, &down, &up}, 128);
        at::Tensor deviceGrad = at::zeros({numel}, at::TensorOptions().dtype(dtype));

        for (int step = 0; step < 3; ++step) {
          const at::Tensor grad = at::randn({numel}).to(dtype);
          const double lr = 1e-2 * (step + 1);
          at::Tensor refGrad = grad.to(at::kFloat).clone();  // fp32: .to() alone would alias grad
          if (gradScale != 1.0) {
            refGrad.mul_(gradScale);
          }
          if (dtype == at::kFloat) {
            refOptimizer->step(refMaster, refGrad, lr);
            refModel.copy_(refMaster);
          } else {
            refOptimizer->stepAndCopy(refMaster, refGrad, lr, refModel);
          }

          std::vector<int64_t> reported;
          if (download) {
            // The gradient is made on the compute stream: a schedule that downloads before waiting for it
            // would copy the previous step's values.
            compute.enqueue([deviceGrad, grad] { deviceGrad.copy_(grad); });
            master.step(*optimizer, deviceGrad, gradScale, lr, {320, numel}, [&](int64_t end) { reported.push_back(end); });
          } else {
            master.hostGrad().copy_(grad);
            master.step(*optimizer, master.hostGrad(), gradScale, lr, {320, numel},
                        [&](int64_t end) { reported.push_back(end); });
          }
          compute.drain();  // a device synchronize: the model is read after this
          CHECK(reported == std::vector<int64_t>{320, numel});
          CHECK(at::equal(master.master(), refMaster));
          CHECK(at::equal(model, refModel));
        }
        const auto state = optimizer->state();
        const auto refState = refOptimizer->state();
        REQUIRE(state.size() == refState.size());
        for (size_t i = 0; i < state.size(); ++i) {
          CHECK(at::equal(state[i].second, refState[i].second));
        }
        CHECK(optimizer->stepCount() == 3);
      }
    }
  }
}

TEST_CASE("an offloaded step whose optimizer does not step piece by piece downloads and scales every piece first",
          "[runtime][zero][offload]") {
  // FlatOptimizer's base stepInPieces (DeviceAdamFlatOptimizer's, and any optimizer that does not override it)
  // reads the whole gradient before it reports a piece: waiting for piece i only at its report handed it
  // pieces still on the download stream (stale here, in flight on a GPU), scaled after it had read them.
  const int64_t numel = 1000;
  dsrt::optim::OptimizerSpec spec;
  spec.kind = dsrt::optim::OptimizerKind::kAdamW;
  spec.weightDecay = 0.01;
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    INFO("dtype " << dtype);
    at::manual_seed(9);
    const at::Tensor initial = at::randn({numel}).to(dtype);
    at::Tensor refMaster = initial.to(at::kFloat);
    at::Tensor refModel = initial.clone();
    dsrt::optim::DeviceAdamFlatOptimizer refOptimizer(spec, numel, at::kCPU, /*useFused=*/false);

    at::Tensor model = initial.clone();
    dsrt::zero::MasterPartition master(model, /*offload=*/true, /*pinMemory=*/false);
    dsrt::optim::DeviceAdamFlatOptimizer optimizer(spec, numel, at::kCPU, /*useFused=*/false);
    REQUIRE_FALSE(optimizer.stepsPieceByPiece());
    std::vector<std::string> log;
    FakePipelineStream compute("compute", &log);
    FakePipelineStream down("download", &log);
    FakePipelineStream up("upload", &log);
    master.usePipelineStreams(PipelineStreams{&compute, &down, &up}, 128);  // 8 pieces
    at::Tensor deviceGrad = at::zeros({numel}, at::TensorOptions().dtype(dtype));
    for (int step = 0; step < 2; ++step) {
      const at::Tensor grad = at::randn({numel}).to(dtype);
      const double lr = 1e-2;
      at::Tensor refGrad = grad.to(at::kFloat).clone().mul_(0.25);
      if (dtype == at::kFloat) {
        refOptimizer.step(refMaster, refGrad, lr);
        refModel.copy_(refMaster);
      } else {
        refOptimizer.stepAndCopy(refMaster, refGrad, lr, refModel);
      }
      compute.enqueue([deviceGrad, grad] { deviceGrad.copy_(grad); });
      master.step(optimizer, deviceGrad, /*gradScale=*/0.25, lr, {numel}, nullptr);
      compute.drain();
      CHECK(at::equal(master.master(), refMaster));
      CHECK(at::equal(model, refModel));
    }
  }
}
