// ClientFlatOptimizer: the update and the state go through callbacks (the Python package's client torch
// optimizer), everything else is FlatOptimizer's. One TEST_CASE: each is a LibTorch process under CTest.

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "runtime/optim/client_flat_optimizer.h"

using Catch::Matchers::Contains;
using dsrt::optim::ClientFlatOptimizer;
using dsrt::optim::ClientOptimizerCallbacks;
using dsrt::optim::GroupRun;
using dsrt::optim::OptimizerState;

namespace {

/// A client that records what it was handed and steps params -= lr * grads.
struct RecordingClient {
  std::vector<std::vector<GroupRun>> binds;
  OptimizerState loaded;
  int64_t steps = 0;

  ClientOptimizerCallbacks callbacks() {
    ClientOptimizerCallbacks cb;
    cb.bind = [this](const at::Tensor&, const std::vector<GroupRun>& runs) { binds.push_back(runs); };
    cb.step = [this](const at::Tensor& params, const at::Tensor& grads, double lr) {
      params.sub_(grads * lr);
      ++steps;
    };
    cb.state = [this] { return loaded; };
    cb.stepCount = [this] { return steps; };
    cb.loadState = [this](const OptimizerState& state, int64_t step) {
      loaded = state;
      steps = step;
    };
    return cb;
  }
};

}  // namespace

TEST_CASE("ClientFlatOptimizer hands the update, its layout and its state to the client", "[runtime][optim]") {
  RecordingClient client;
  at::Tensor flat = at::ones({6});
  ClientFlatOptimizer opt(flat, client.callbacks());

  SECTION("the client is bound once, on first use, with the strategy's group runs") {
    opt.setGroupRuns({{2, 0}, {5, 1}, {6, 0}});
    CHECK(client.binds.empty());
    opt.step(flat, at::full({6}, 2.0), 0.5);
    opt.step(flat, at::full({6}, 2.0), 0.5);
    REQUIRE(client.binds.size() == 1);
    CHECK(client.binds[0].size() == 3);
    CHECK(client.binds[0][1].end == 5);
    CHECK(client.binds[0][1].group == 1);
    CHECK(at::allclose(flat, at::full({6}, -1.0)));
    CHECK(opt.stepCount() == 2);
  }

  SECTION("without runs the whole tensor is one run of group 0") {
    opt.bind();
    REQUIRE(client.binds.size() == 1);
    REQUIRE(client.binds[0].size() == 1);
    CHECK(client.binds[0][0].end == 6);
    CHECK(client.binds[0][0].group == 0);
  }

  SECTION("stepAndCopy gives the low-precision copy the client's result") {
    at::Tensor low = at::zeros({6}, at::kBFloat16);
    opt.stepAndCopy(flat, at::full({6}, 1.0), 0.25, low);
    CHECK(at::equal(low, at::full({6}, 0.75, at::kBFloat16)));
  }

  SECTION("a step on another tensor than the bound one is refused") {
    at::Tensor other = at::ones({6});
    REQUIRE_THROWS_WITH(opt.step(other, at::ones({6}), 0.1), Contains("other than the flat partition"));
    CHECK(client.steps == 0);
  }

  SECTION("state and step count go to and come from the client; a state of the wrong size is refused") {
    opt.loadState({{"square_avg", at::full({6}, 3.0)}}, 7);
    CHECK(opt.stepCount() == 7);
    REQUIRE(opt.state().size() == 1);
    CHECK(opt.state()[0].first == "square_avg");
    CHECK(opt.stateBytes() == 6 * 4);
    REQUIRE_THROWS_WITH(opt.loadState({{"square_avg", at::zeros({5})}}, 1),
                        Contains("state 'square_avg' must have 6 elements, got '5'"));
  }
}
