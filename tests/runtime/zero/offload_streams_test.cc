// The stream ordering of offload's copies on CPU tensors, with fake streams (fake_pipeline_stream.h): the
// compute stream runs its work at once (the host runs a CPU model's kernels in place), the copy streams only
// when something waits for them, so a missing wait reads stale data and fails the exactness checks.
//  - SideStreamCopies: copies start after the compute work issued before them; compute and host wait only
//    where asked, once.
//  - HostGradDownload (ZeRO-2/3 offload's gradient runs to host memory): the values, and the contract that
//    a buffer it read may be overwritten after beforeReuse().
//  - ZeRO-2 and ZeRO-3 offload runs with the accelerator's copy paths equal the runs without, and no host
//    wait happens inside a micro-step (forward + backward).
//  - ZeRO-3 offload_param: a prefetched module's upload is issued before the module ahead of it computes,
//    and the compute stream waits for it only when the module runs.
#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "runtime/zero/host_grad_download.h"
#include "runtime/zero/side_stream_copies.h"
#include "tests/runtime/zero/fake_pipeline_stream.h"
#include "tests/runtime/zero/stage3_run.h"

using dsrt::testing::FakePipelineStream;
using dsrt::zero::HostGradDownload;
using dsrt::zero::PipelineStreams;
using dsrt::zero::SideStreamCopies;
using dsrt::zero::testing::RunHooks;
using dsrt::zero::testing::RunResult;
using dsrt::zero::testing::RunSpec;
using dsrt::zero::testing::Stage3Spec;

namespace {

/// One rank's fake streams and the log they share.
struct RankStreams {
  std::vector<std::string> log;
  FakePipelineStream compute{"compute", &log, /*eager=*/true};
  FakePipelineStream download{"download", &log};
  FakePipelineStream upload{"upload", &log};
  PipelineStreams streams{&compute, &download, &upload};
};

/// The log entries from the first `from` marker (inclusive) to the next `to` marker (exclusive).
std::vector<std::string> between(const std::vector<std::string>& log, size_t from, const std::string& to) {
  std::vector<std::string> out;
  for (size_t i = from; i < log.size() && (i == from || log[i] != to); ++i) {
    out.push_back(log[i]);
  }
  return out;
}

/// Entries of `log` that are host waits inside a micro-step (between "micro-step begins" and "ends").
std::vector<std::string> hostWaitsInMicroSteps(const std::vector<std::string>& log) {
  std::vector<std::string> found;
  bool inside = false;
  for (const std::string& e : log) {
    if (e == "micro-step begins") inside = true;
    if (e == "micro-step ends") inside = false;
    if (inside && e.rfind("host waits", 0) == 0) found.push_back(e);
  }
  return found;
}

int count(const std::vector<std::string>& log, const std::string& entry) {
  return static_cast<int>(std::count(log.begin(), log.end(), entry));
}

void checkSameRun(const RunResult& got, const RunResult& want) {
  REQUIRE(got.losses.size() == want.losses.size());
  for (size_t s = 0; s < want.losses.size(); ++s) {
    CHECK(got.losses[s] == want.losses[s]);
    CHECK(got.norms[s] == want.norms[s]);
  }
  REQUIRE(got.params.size() == want.params.size());
  for (size_t i = 0; i < want.params.size(); ++i) {
    CHECK(at::equal(got.params[i], want.params[i]));
  }
}

}  // namespace

TEST_CASE("side stream copies start after the compute work before them and are waited for only where asked",
          "[runtime][zero][offload]") {
  std::vector<std::string> log;
  FakePipelineStream compute("compute", &log);
  FakePipelineStream side("side", &log);
  SideStreamCopies copies(&compute, &side);
  auto first = copies.issue([&] { log.push_back("copy 1"); });
  copies.issue([&] { log.push_back("copy 2"); });
  copies.computeWaits(*first);
  copies.computeWaitsAll();
  copies.computeWaitsAll();  // nothing issued since: no second wait
  copies.launchAfterCopies([&] { log.push_back("collective"); });
  copies.hostWaitsAll();
  copies.hostWaitsAll();
  const std::vector<std::string> expected{"side waits for compute", "side enqueue", "side waits for compute",
                                          "side enqueue", "compute waits for side", "compute waits for side",
                                          // the collective is launched now, behind the copies
                                          "side launches", "copy 1", "copy 2", "collective",
                                          "host waits for side"};
  CHECK(log == expected);
}

TEST_CASE("host gradient downloads convert on the device, accumulate like the host and leave their source alone "
          "until beforeReuse",
          "[runtime][zero][offload]") {
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16, at::kHalf}) {
    for (int64_t scratch : {int64_t{1} << 22, int64_t{64}}) {  // one piece, or pieces of 64 (a short last one)
      INFO("dtype " << dtype << " scratch " << scratch);
      RankStreams s;
      HostGradDownload download(std::make_unique<SideStreamCopies>(&s.compute, &s.download), 300, scratch);
      at::manual_seed(3);
      at::Tensor host = at::randn({300});
      const at::Tensor before = host.clone();
      at::Tensor fresh = at::randn({100}).to(dtype);
      at::Tensor added = at::randn({200}).to(dtype);
      const at::Tensor freshValue = fresh.clone();
      const at::Tensor addedValue = added.clone();
      download.deliver(host.narrow(0, 0, 100), fresh, /*accumulate=*/false);
      download.deliver(host.narrow(0, 100, 200), added, /*accumulate=*/true);
      CHECK(at::equal(host, before));  // nothing has run: the host did not wait
      download.beforeReuse();
      fresh.fill_(7);  // the compute stream reuses the buffers: the downloads already read them
      added.fill_(7);
      download.awaitHost();
      CHECK(at::equal(host.narrow(0, 0, 100), freshValue.to(at::kFloat)));
      at::Tensor want = before.narrow(0, 100, 200).clone();
      want.add_(addedValue);  // the host's own accumulation
      CHECK(at::equal(host.narrow(0, 100, 200), want));
      CHECK(count(s.log, "host waits for download") == 1);
    }
  }
}

TEST_CASE("ZeRO-2 offload with its downloads on a side stream equals the synchronous run, with no host wait in "
          "backward",
          "[runtime][zero][offload]") {
  for (int world : {1, 2}) {
    for (int gas : {1, 3}) {
      for (bool reduceScatter : {true, false}) {
        RunSpec spec;
        spec.stage = 2;
        spec.worldSize = world;
        spec.gas = gas;
        spec.reduceScatter = reduceScatter;
        spec.steps = 3;
        INFO(spec.name() << " offload");
        RunHooks hooks;
        hooks.configure = [](int, dsrt::StrategyContext& ctx) { ctx.offloadOptimizer = true; };
        const std::vector<RunResult> plain = dsrt::zero::testing::zeroRun(spec, -1, hooks);
        std::deque<RankStreams> streams(static_cast<size_t>(world));
        hooks.configure = [&](int rank, dsrt::StrategyContext& ctx) {
          ctx.offloadOptimizer = true;
          ctx.testStreams = &streams[static_cast<size_t>(rank)].streams;
        };
        hooks.onEvent = [&](int rank, const char* event) { streams[static_cast<size_t>(rank)].log.push_back(event); };
        const std::vector<RunResult> streamed = dsrt::zero::testing::zeroRun(spec, -1, hooks);
        for (int r = 0; r < world; ++r) {
          checkSameRun(streamed[static_cast<size_t>(r)], plain[static_cast<size_t>(r)]);
          const auto& log = streams[static_cast<size_t>(r)].log;
          // Gloo's reduce-scatter sums a fresh partition's runs straight into host memory: no download.
          CHECK((count(log, "download enqueue") > 0) == (world == 1 || gas > 1 || !reduceScatter));
          CHECK(hostWaitsInMicroSteps(log).empty());
        }
      }
    }
  }
}

TEST_CASE("ZeRO-3 offload_param with uploads and downloads on side streams equals the synchronous run, with no "
          "host wait in forward or backward",
          "[runtime][zero][offload][stage3]") {
  for (int world : {1, 2}) {
    for (int gas : {1, 2}) {
      for (int64_t prefetch : {int64_t{50000000}, int64_t{0}}) {
        Stage3Spec spec;
        spec.run.worldSize = world;
        spec.run.gas = gas;
        spec.run.steps = 3;
        spec.offload = true;
        spec.offloadParam = true;
        spec.prefetch = prefetch;
        INFO(spec.name());
        const auto plain = dsrt::zero::testing::stage3Run(spec);
        std::deque<RankStreams> streams(static_cast<size_t>(world));
        RunHooks hooks;
        hooks.configure = [&](int rank, dsrt::StrategyContext& ctx) {
          ctx.testStreams = &streams[static_cast<size_t>(rank)].streams;
        };
        hooks.onEvent = [&](int rank, const char* event) { streams[static_cast<size_t>(rank)].log.push_back(event); };
        const auto streamed = dsrt::zero::testing::stage3Run(spec, hooks);
        for (int r = 0; r < world; ++r) {
          checkSameRun(streamed[static_cast<size_t>(r)].run, plain[static_cast<size_t>(r)].run);
          CHECK(streamed[static_cast<size_t>(r)].planned);
          const auto& log = streams[static_cast<size_t>(r)].log;
          CHECK(count(log, "upload enqueue") > 0);
          CHECK((count(log, "download enqueue") > 0) == (world == 1 || gas > 1));
          CHECK(hostWaitsInMicroSteps(log).empty());
          // The optimizer rewrites the host partition only after the host waited for its readers.
          CHECK(count(log, "host waits for upload") >= 1);
        }
      }
    }
  }
}

namespace {

/// Three layers, each its own ZeRO-3 unit; the forward logs when each layer has computed.
struct LoggedMlpImpl : torch::nn::Module {
  LoggedMlpImpl(const std::vector<at::Tensor>& init, std::vector<std::string>* log)
      : fc0(register_module("fc0", dsrt::zero::testing::SavingLinear(init[0], init[1]))),
        fc1(register_module("fc1", dsrt::zero::testing::SavingLinear(init[2], init[3]))),
        fc2(register_module("fc2", dsrt::zero::testing::SavingLinear(init[4], init[5]))),
        log_(log) {}
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor h = at::relu(dsrt::zero::forward(fc0, x));
    log_->push_back("layer 0 computed");
    h = at::relu(dsrt::zero::forward(fc1, h));
    log_->push_back("layer 1 computed");
    h = dsrt::zero::forward(fc2, h);
    log_->push_back("layer 2 computed");
    return h;
  }
  dsrt::zero::testing::SavingLinear fc0, fc1, fc2;
  std::vector<std::string>* log_;
};
TORCH_MODULE(LoggedMlp);

/// The log of each micro-step's forward (from "micro-step begins" to "layer 2 computed") over `microSteps`
/// micro-steps of offload_param training on one rank with `prefetch` (stage3_prefetch_bucket_size).
std::vector<std::vector<std::string>> forwardLogs(int64_t prefetch, int microSteps) {
  RankStreams s;
  std::vector<std::vector<std::string>> forwards;
  dsrt::zero::testing::runRanks(1, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    LoggedMlp model(dsrt::zero::testing::initialParams(), &s.log);
    Stage3Spec spec;
    spec.offload = true;
    spec.offloadParam = true;
    spec.prefetch = prefetch;
    dsrt::StrategyContext ctx = dsrt::zero::testing::stage3Context(spec, model->parameters(), pg, rank);
    ctx.testStreams = &s.streams;
    dsrt::zero::Stage3Strategy strategy(std::move(ctx));
    const auto data = dsrt::zero::testing::makeData(8);
    for (int m = 0; m < microSteps; ++m) {
      const size_t begin = s.log.size();
      s.log.push_back("micro-step begins");
      strategy.beginBackward(true);
      at::mse_loss(model->forward(data.x), data.y).backward();
      strategy.endBackward(true);
      forwards.push_back(between(s.log, begin, "layer 2 computed"));
      strategy.step(RunSpec::kLr, 1.0);
      strategy.zeroGrad();
    }
  });
  return forwards;
}

}  // namespace

TEST_CASE("ZeRO-3 offload_param uploads a prefetched module while the module before it computes",
          "[runtime][zero][offload][stage3]") {
  // An on-demand gather: its upload is issued and at once waited for by the compute stream.
  const std::vector<std::string> onDemand{"upload waits for compute", "upload enqueue", "compute waits for upload"};
  auto join = [](std::vector<std::vector<std::string>> parts) {
    std::vector<std::string> out{"micro-step begins"};
    for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  };
  const auto withPrefetch = forwardLogs(50000000, 2);
  // The first micro-step records the trace: every module is fetched when it runs.
  CHECK(withPrefetch[0] == join({onDemand, {"layer 0 computed"}, onDemand, {"layer 1 computed"}, onDemand}));
  // Replayed: at layer 0's fetch, layers 1 and 2 are prefetched in one gather whose upload is issued
  // before layer 0 computes; the compute stream waits for it only when layer 1 is about to run.
  CHECK(withPrefetch[1] == join({onDemand, {"upload waits for compute", "upload enqueue", "layer 0 computed",
                                           "compute waits for upload", "layer 1 computed"}}));
  // stage3_prefetch_bucket_size 0: nothing travels ahead of its use.
  const auto noPrefetch = forwardLogs(0, 2);
  CHECK(noPrefetch[1] == noPrefetch[0]);
}
