// ZeRO-3 beyond exactness: the model_state_bytes accounting of the ZeRO paper, parameters released
// after construction and restored by fullParams/loadMasterPartition/loadFullParams, the coordinator
// following its plan (gathers counted against planFetches), and the engine running stage 3 from a
// ds_config with the same losses as stage 0.
#include "runtime/runtime.h"
#include "runtime/zero/stage3_fetch_plan.h"
#include "runtime/zero/zero_strategy.h"
#include "tests/runtime/core/exactness_harness.h"  // distFor
#include "tests/runtime/zero/stage3_run.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using dsrt::StrategyContext;
using dsrt::zero::Stage3Strategy;
using dsrt::zero::testing::maxRelDiff;
using dsrt::zero::testing::RunSpec;
using dsrt::zero::testing::Stage3Spec;
using dsrt::zero::testing::stage3Run;

TEST_CASE("ZeRO-3 model_state_bytes is 16 Psi / N for Adam plus persistent parameters",
          "[runtime][zero][stage3][gloo]") {
  // Psi = 1000003 in three tensors; the 3-element one is persistent when the threshold is >= 3.
  const std::vector<int64_t> numels{600001, 399999, 3};
  for (int world : {1, 2, 4}) {
    const int64_t unit = world * 2;  // worldSize * kDefaultAlignment
    const int64_t padded = (1000003 + unit - 1) / unit * unit;
    const int64_t part = padded / world;
    struct Case {
      bool adam;
      double momentum;
      int64_t threshold;
      bool offload;
      int64_t expected;
      int64_t offloaded;
      bool offloadParam = false;
    };
    const std::vector<Case> cases{
        {true, 0.0, 0, false, 4 * part + 4 * part + 8 * part, 0},           // param + grad partitions, Adam m, v
        {true, 0.0, 10, false, 4 * part + 4 * part + 8 * part + 4 * 3, 0},  // + the persistent tensor's data
        {false, 0.9, 0, false, 4 * part + 4 * part + 4 * part, 0},          // SGD momentum buffer
        {false, 0.0, 100, false, 4 * part + 4 * part + 4 * 3, 0},           // plain SGD: no state
        // offload_optimizer: the fp32 master, the gradient partition and Adam's state are host memory
        {true, 0.0, 10, true, 4 * part + 4 * 3, 4 * part + 4 * part + 8 * part},
        // + offload_param: the parameter partition is host memory too; persistent parameters stay
        {true, 0.0, 10, true, 4 * 3, 4 * part + 4 * part + 4 * part + 8 * part, true},
        // offload_param alone (CPU model): only the parameter partition counts as host memory
        {true, 0.0, 10, false, 4 * part + 8 * part + 4 * 3, 4 * part, true},
    };
    for (const auto& c : cases) {
      INFO("world " << world << (c.adam ? " adam" : " sgd") << " threshold " << c.threshold
                    << (c.offload ? " offload" : ""));
      std::vector<int64_t> got(static_cast<size_t>(world));
      std::vector<int64_t> gotOffloaded(static_cast<size_t>(world));
      std::vector<int64_t> heldNumel(static_cast<size_t>(world));
      dsrt::zero::testing::runRanks(world, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
        std::vector<at::Tensor> params;
        for (auto n : numels) {
          params.push_back(at::zeros({n}).set_requires_grad(true));
        }
        Stage3Spec spec;
        spec.run.worldSize = world;
        spec.run.adam = c.adam;
        spec.persistence = c.threshold;
        spec.offload = c.offload;
        spec.offloadParam = c.offloadParam;
        StrategyContext ctx = dsrt::zero::testing::stage3Context(spec, params, pg, rank);
        dsrt::optim::OptimizerSpec ospec;
        ospec.kind = c.adam ? dsrt::optim::OptimizerKind::kAdam : dsrt::optim::OptimizerKind::kSgd;
        ospec.momentum = c.momentum;
        ctx.makeOptimizer = [ospec](at::Tensor flat) { return dsrt::optim::makeFlatOptimizer(ospec, flat.numel()); };
        auto strategy = dsrt::zero::makeZeroStrategy(3, ctx);
        got[static_cast<size_t>(rank)] = strategy->modelStateBytes();
        gotOffloaded[static_cast<size_t>(rank)] = strategy->offloadedStateBytes();
        for (const auto& p : params) {
          heldNumel[static_cast<size_t>(rank)] += p.numel();
        }
      });
      for (int r = 0; r < world; ++r) {
        CHECK(got[static_cast<size_t>(r)] == c.expected);
        CHECK(gotOffloaded[static_cast<size_t>(r)] == c.offloaded);
        // The model's own tensors hold only the persistent parameter.
        CHECK(heldNumel[static_cast<size_t>(r)] == (c.threshold >= 3 ? 3 : 0));
      }
    }
  }
}

TEST_CASE("ZeRO-3 fullParams, loadMasterPartition and loadFullParams round-trip the released model",
          "[runtime][zero][stage3][gloo]") {
  struct Seen {
    double fullVsInit = -1;
    double afterLoadMaster = -1;
    double afterLoadFull = -1;
    int64_t persistentNumel = -1;
    std::string error;
  };
  auto init = dsrt::zero::testing::initialParams();
  std::vector<Seen> seen(3);
  dsrt::zero::testing::runRanks(3, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    Seen& s = seen[static_cast<size_t>(rank)];
    auto params = dsrt::zero::testing::replicate(init);
    Stage3Spec spec;
    spec.run.worldSize = 3;
    spec.persistence = 13;  // the 13-, 5- and 1-element biases stay whole
    Stage3Strategy strategy(dsrt::zero::testing::stage3Context(spec, params, pg, rank));
    s.fullVsInit = maxRelDiff(strategy.fullParams(), init);
    at::Tensor master = strategy.masterPartition().clone();
    strategy.loadMasterPartition(at::zeros_like(master));
    s.persistentNumel = params[1].numel() + params[3].numel() + params[5].numel();
    strategy.loadMasterPartition(master);
    s.afterLoadMaster = maxRelDiff(strategy.fullParams(), init);
    std::vector<at::Tensor> doubled;
    for (const auto& t : init) {
      doubled.push_back((t * 2).to(at::kDouble));  // any floating dtype is accepted
    }
    strategy.loadFullParams(doubled);
    auto full = strategy.fullParams();
    double worst = 0;
    for (size_t i = 0; i < full.size(); ++i) {
      worst = std::max(worst, (full[i] - init[i] * 2).abs().max().item<double>());
    }
    // the persistent bias of layer 0 holds its (doubled) data in the model itself
    worst = std::max(worst, (params[1].detach() - init[1] * 2).abs().max().item<double>());
    s.afterLoadFull = worst;
  });
  for (const Seen& s : seen) {
    CHECK(s.fullVsInit == 0);
    CHECK(s.persistentNumel == 13 + 5 + 1);
    CHECK(s.afterLoadMaster == 0);
    CHECK(s.afterLoadFull == 0);
  }
}

TEST_CASE("the ZeRO-3 coordinator gathers exactly what planFetches predicts", "[runtime][zero][stage3][gloo]") {
  // Zero3Mlp's trace per micro-step: forward fc0 fc1 fc2, backward fc2 fc1 fc0; units of 104, 70 and 6
  // elements (weights + biases, persistence 0). The first micro-step records it (everything released
  // after use: 360 elements gathered); the others replay the plan.
  const std::vector<int> trace{0, 1, 2, 2, 1, 0};
  const std::vector<int64_t> numels{104, 70, 6};
  // An evaluation forward (no grad) after each step gathers each unit once, outside the trace.
  using Row = std::tuple<int64_t, int64_t, int64_t, bool>;
  for (const auto& [prefetch, maxLive, maxReuse, eval] : std::vector<Row>{
           {50000000, 1000000000, 1000000000, false},  // everything prefetched at the first fetch and kept
           {0, 1000000000, 0, false},                  // only the last layer kept between forward and backward
           {80, 1000000000, 0, false},                 // fc1 + fc2 prefetched, then re-gathered in backward
           {0, 110, 1000000000, false},                // max live: fc0 and fc1 cannot both stay
           {80, 1000000000, 0, true},
       }) {
    dsrt::zero::FetchSettings fs;
    fs.prefetchBucketNumel = prefetch;
    fs.maxLiveNumel = maxLive;
    fs.maxReuseDistance = maxReuse;
    const auto plan = dsrt::zero::planFetches(trace, numels, fs);
    Stage3Spec spec;
    spec.run.stage = 3;
    spec.run.worldSize = 2;
    spec.run.gas = 2;
    spec.run.steps = 3;
    spec.prefetch = prefetch;
    spec.maxLive = maxLive;
    spec.maxReuse = maxReuse;
    spec.evalForward = eval;
    auto ranks = stage3Run(spec);
    INFO(spec.name() << " planned fetch " << plan.fetchedNumel << " peak " << plan.peakLiveNumel);
    const int64_t microSteps = spec.run.steps * spec.run.gas;
    for (const auto& r : ranks) {
      CHECK(r.planned);
      CHECK(r.gatheredNumel == 360 + (microSteps - 1) * plan.fetchedNumel + (eval ? spec.run.steps * 180 : 0));
      CHECK(r.peakLiveNumel == std::max<int64_t>(plan.peakLiveNumel, 104));
      CHECK(r.releasedAfterEveryBackward);
    }
  }
}

namespace {

struct EngineRun {
  std::vector<double> losses;
  std::vector<at::Tensor> params;
  int64_t modelStateBytes = 0;
};

EngineRun engineRun(int stage, int world, bool offload = false, bool offloadParam = false) {
  const auto init = dsrt::zero::testing::initialParams();
  const auto data = dsrt::zero::testing::makeData(24 * 3);
  nlohmann::json config{
      {"train_batch_size", 24},
      {"train_micro_batch_size_per_gpu", 24 / world / 2},
      {"gradient_clipping", 1.0},
      {"optimizer", {{"type", "Adam"}, {"params", {{"lr", 0.05}, {"weight_decay", 0.01}}}}},
      {"zero_optimization",
       {{"stage", stage},
        {"reduce_bucket_size", 40},
        {"stage3_param_persistence_threshold", 13},
        {"stage3_prefetch_bucket_size", 80},
        {"stage3_max_live_parameters", 200},
        {"stage3_max_reuse_distance", 100}}},
  };
  if (offload) {
    config["zero_optimization"]["offload_optimizer"] = {{"device", "cpu"}};
  }
  if (offloadParam) {
    config["zero_optimization"]["offload_param"] = {{"device", "cpu"}};
  }
  std::vector<EngineRun> runs(static_cast<size_t>(world));
  dsrt::zero::testing::runRanks(world, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    dsrt::InitOptions opts;
    opts.dist = dsrt::testing::distFor(rank, world, pg);
    auto engine = dsrt::initialize(dsrt::zero::testing::Zero3Mlp(init), config, opts);
    EngineRun& out = runs[static_cast<size_t>(rank)];
    const int64_t micro = engine->train_micro_batch_size_per_gpu();
    for (int step = 0; step < 3; ++step) {
      double sum = 0;
      for (int m = 0; m < engine->gradient_accumulation_steps(); ++m) {
        const int64_t first = step * 24 + (m * world + rank) * micro;
        at::Tensor loss = at::mse_loss(engine->forward(data.x.narrow(0, first, micro)), data.y.narrow(0, first, micro));
        engine->backward(loss);
        engine->step();
        sum += loss.item<double>();
      }
      std::vector<at::Tensor> t{at::full({1}, sum, at::kDouble)};
      pg->allreduce(t)->wait();
      out.losses.push_back(t[0].item<double>() / (world * engine->gradient_accumulation_steps()));
    }
    out.params = engine->strategy().fullParams();
    out.modelStateBytes = engine->model_state_bytes();
  });
  return runs[0];
}

}  // namespace

TEST_CASE("the engine runs ZeRO-3 from a ds_config with the losses of stage 0", "[runtime][zero][stage3][gloo]") {
  const EngineRun ref = engineRun(0, 1);
  using Row = std::tuple<int, bool, bool>;
  for (auto [world, offload, offloadParam] : std::vector<Row>{{1, false, false}, {2, false, false},
                                                              {2, true, false}, {2, true, true}, {2, false, true}}) {
    const EngineRun got = engineRun(3, world, offload, offloadParam);
    INFO("world " << world << (offload ? " offload_optimizer" : "") << (offloadParam ? " offload_param" : ""));
    REQUIRE(got.losses.size() == ref.losses.size());
    for (size_t s = 0; s < ref.losses.size(); ++s) {
      CHECK(dsrt::zero::testing::relDiff(got.losses[s], ref.losses[s]) < 1e-5);
    }
    CHECK(maxRelDiff(got.params, ref.params) < 1e-5);
    if (world > 1) {  // one rank holds all of 16 Psi either way, stage 3 plus its persistent biases
      CHECK(got.modelStateBytes < ref.modelStateBytes);
    }
  }
}

TEST_CASE("examples/ds_config_zero3.json configures stage 3", "[runtime][zero][stage3]") {
  const auto cfg = dsrt::loadConfig(std::string(DSRUN_SOURCE_DIR) + "/examples/ds_config_zero3.json", 2);
  CHECK(cfg.zero.stage == 3);
  CHECK(cfg.zero.prefetchBucketSize == 50000000);
  CHECK(cfg.zero.paramPersistenceThreshold == 100000);
  CHECK(cfg.zero.maxLiveParameters == 1000000000);
  CHECK(cfg.zero.maxReuseDistance == 1000000000);
  CHECK(cfg.batch.gradientAccumulationSteps == 1);
}

// offload_param without offload_optimizer is refused only for a model on an accelerator (no GPU here); on
// CPU it runs (the exactness and accounting tests above).
TEST_CASE("ZeRO-3 rejects other dtypes and mixed dtypes", "[runtime][zero][stage3][gloo]") {
  std::vector<std::string> errors(2);
  dsrt::zero::testing::runRanks(1, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    auto attempt = [&](size_t slot, std::vector<at::Tensor> params, Stage3Spec spec = {}) {
      try {
        dsrt::zero::makeZeroStrategy(3, dsrt::zero::testing::stage3Context(spec, std::move(params), pg, rank));
      } catch (const c10::Error& e) {
        errors[slot] = e.what_without_backtrace();
      }
    };
    attempt(0, {at::zeros({4}, at::kDouble).set_requires_grad(true)});
    attempt(1, {at::zeros({4}).set_requires_grad(true), at::zeros({4}, at::kBFloat16).set_requires_grad(true)});
  });
  CHECK_THAT(errors[0], Catch::Contains("parameter 0 must be fp32, fp16 or bf16, got 'Double'"));
  CHECK_THAT(errors[1], Catch::Contains("parameter 1 differs in dtype or device from parameter 0"));
}

namespace {

/// A linear layer that remembers the storage its weight had during its last forward.
struct ProbeLinearImpl : torch::nn::Module {
  ProbeLinearImpl(const at::Tensor& w, const at::Tensor& b, bool saving) : saving(saving) {
    weight = register_parameter("weight", w.clone());
    bias = register_parameter("bias", b.clone());
  }
  at::Tensor forward(const at::Tensor& x) {
    storage = weight.storage().getWeakStorageImpl();
    return saving ? dsrt::zero::linear(x, weight, bias) : at::linear(x, weight, bias);
  }
  at::Tensor weight;
  at::Tensor bias;
  bool saving;
  c10::weak_intrusive_ptr<c10::StorageImpl> storage{c10::intrusive_ptr<c10::StorageImpl>()};
};
TORCH_MODULE(ProbeLinear);

}  // namespace

TEST_CASE("dsrt::zero::linear frees a gathered weight after the forward, at::linear only after the backward",
          "[runtime][zero][stage3][gloo]") {
  // Layers 0 and 2 use dsrt::zero::linear, layer 1 at::linear (whose saved weight.t() view keeps the
  // gathered storage). Reuse distance 0 and no prefetch: layers 0 and 1 are released after their forward.
  struct Seen {
    std::vector<bool> aliveAfterForward;
    std::vector<bool> aliveAfterBackward;
    std::vector<int64_t> numelAfterForward;
  };
  auto init = dsrt::zero::testing::initialParams();
  auto data = dsrt::zero::testing::makeData(8);
  std::vector<Seen> seen(2);
  dsrt::zero::testing::runRanks(2, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    std::vector<ProbeLinear> layers{ProbeLinear(init[0], init[1], true), ProbeLinear(init[2], init[3], false),
                                    ProbeLinear(init[4], init[5], true)};
    std::vector<at::Tensor> params;
    for (auto& l : layers) {
      params.push_back(l->weight);
      params.push_back(l->bias);
    }
    Stage3Spec spec;
    spec.run.worldSize = 2;
    spec.prefetch = 0;
    spec.maxReuse = 0;
    Stage3Strategy strategy(dsrt::zero::testing::stage3Context(spec, params, pg, rank));
    Seen& s = seen[static_cast<size_t>(rank)];
    for (int micro = 0; micro < 2; ++micro) {  // the second micro-step replays the plan
      strategy.beginBackward(true);
      at::Tensor h = data.x.narrow(0, rank * 4, 4);
      for (size_t l = 0; l < layers.size(); ++l) {
        h = dsrt::zero::forward(layers[l], h);
        h = l + 1 < layers.size() ? at::relu(h) : h;
      }
      s.aliveAfterForward.clear();
      s.numelAfterForward.clear();
      for (auto& l : layers) {
        s.aliveAfterForward.push_back(!l->storage.expired());
        s.numelAfterForward.push_back(l->weight.numel());
      }
      at::mse_loss(h, data.y.narrow(0, rank * 4, 4)).backward();
      strategy.endBackward(true);
      s.aliveAfterBackward.clear();
      for (auto& l : layers) {
        s.aliveAfterBackward.push_back(!l->storage.expired());
      }
      strategy.zeroGrad();
    }
  });
  for (const Seen& s : seen) {
    // The parameters themselves are released after the forward except the last layer (reuse distance 0).
    CHECK(s.numelAfterForward == std::vector<int64_t>{0, 0, 5});
    CHECK(s.aliveAfterForward == std::vector<bool>{false, true, true});
    CHECK(s.aliveAfterBackward == std::vector<bool>{false, false, false});
  }
}
