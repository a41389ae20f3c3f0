#include "runtime/ddp/grad_reducer.h"

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <vector>

#include "runtime/ddp/bucket_plan.h"
#include "tests/runtime/core/thread_world.h"

using dsrt::ddp::GradReducer;
using dsrt::ddp::ParamSize;
using dsrt::ddp::planBuckets;
using dsrt::testing::runThreadWorld;

namespace {

// A 3-layer tanh MLP as raw leaves: an unused parameter at index 0 that never takes part in the forward
// (it lands in the last bucket, so it cannot hold back the early ones), then w0 [8,6], b0 [8], w1 [8,8],
// b1 [8], w2 [1,8], b2 [1].
std::vector<at::Tensor> makeParams() {
  auto gen = at::detail::createCPUGenerator(1234);
  std::vector<std::vector<int64_t>> shapes{{4}, {8, 6}, {8}, {8, 8}, {8}, {1, 8}, {1}};
  std::vector<at::Tensor> params;
  for (const auto& s : shapes) {
    params.push_back(at::randn(s, gen).mul_(0.5).set_requires_grad(true));
  }
  return params;
}

at::Tensor batchFor(int rank, int microStep) {
  auto gen = at::detail::createCPUGenerator(100 * rank + microStep + 7);
  return at::randn({5, 6}, gen);
}

at::Tensor lossOf(const std::vector<at::Tensor>& p, const at::Tensor& x) {
  auto h = at::tanh(at::linear(x, p[1], p[2]));
  h = at::tanh(at::linear(h, p[3], p[4]));
  return at::linear(h, p[5], p[6]).pow(2).mean();
}

std::vector<dsrt::ddp::Bucket> smallBuckets(const std::vector<at::Tensor>& params) {
  std::vector<ParamSize> sizes;
  for (const auto& p : params) {
    sizes.push_back(ParamSize{p.numel(), 4, 0});
  }
  return planBuckets(sizes, 40, 100);  // several buckets, so overlap can be observed
}

// Reference: each rank's gradient summed over its micro-steps, averaged over ranks, in one thread.
std::vector<at::Tensor> referenceGrads(int world, int microSteps) {
  std::vector<at::Tensor> sum;
  for (int r = 0; r < world; ++r) {
    auto params = makeParams();
    for (int m = 0; m < microSteps; ++m) {
      lossOf(params, batchFor(r, m)).backward();
    }
    for (size_t i = 0; i < params.size(); ++i) {
      at::Tensor g = params[i].grad().defined() ? params[i].grad() : at::zeros_like(params[i]);
      if (sum.size() <= i) {
        sum.push_back(g.clone());
      } else {
        sum[i].add_(g);
      }
    }
  }
  for (auto& g : sum) {
    g.div_(world);
  }
  return sum;
}

}  // namespace

TEST_CASE("GradReducer averages gradients over 1, 2 and 4 ranks, accumulating without reducing in between",
          "[runtime][ddp]") {
  for (int world : {1, 2, 4}) {
    for (int microSteps : {1, 3}) {
      for (bool overlap : {true, false}) {
        INFO("world " << world << " microSteps " << microSteps << " overlap " << overlap);
        auto expected = referenceGrads(world, microSteps);
        runThreadWorld(world, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
          auto params = makeParams();
          GradReducer reducer(params, pg, smallBuckets(params), overlap);
          RANK_REQUIRE(reducer.numBuckets() > 2, "rank " << rank);
          for (int m = 0; m < microSteps; ++m) {
            const bool boundary = m == microSteps - 1;
            reducer.prepare(boundary);
            lossOf(params, batchFor(rank, m)).backward();
            if (!boundary) {
              continue;
            }
            // Before finish, the buffer still holds this rank's own accumulated gradient.
            if (world > 1 && !overlap) {
              RANK_REQUIRE(reducer.launchedDuringBackward() == 0, "rank " << rank);
            }
            reducer.finish();
            if (world > 1 && overlap) {
              RANK_REQUIRE(reducer.launchedDuringBackward() > 0, "rank " << rank);
            }
          }
          for (size_t i = 0; i < params.size(); ++i) {
            RANK_REQUIRE(params[i].grad().defined(), "rank " << rank << " parameter " << i);
            RANK_REQUIRE(at::allclose(params[i].grad(), expected[i], 1e-6, 1e-7), "rank " << rank << " parameter " << i);
          }
          // .grad is a view into the flat buffer the allreduce read and wrote.
          RANK_REQUIRE(params[2].grad().data_ptr() ==
                           static_cast<float*>(reducer.flatGrad().data_ptr()) + reducer.offsetOf(2),
                       "rank " << rank);
        });
      }
    }
  }
}

TEST_CASE("GradReducer keeps reducing after zeroGrad, also when the user replaced or dropped .grad",
          "[runtime][ddp]") {
  auto expected = referenceGrads(2, 1);
  runThreadWorld(2, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    auto params = makeParams();
    GradReducer reducer(params, pg, smallBuckets(params), true);
    for (int step = 0; step < 3; ++step) {
      if (step == 1) {
        params[1].mutable_grad() = at::Tensor();  // zero_grad(set_to_none=true) on one parameter
        params[3].mutable_grad() = at::zeros_like(params[3]);
      }
      reducer.prepare(true);
      lossOf(params, batchFor(rank, 0)).backward();
      reducer.finish();
      for (size_t i = 0; i < params.size(); ++i) {
        RANK_REQUIRE(at::allclose(params[i].grad(), expected[i], 1e-6, 1e-7),
                     "step " << step << " rank " << rank << " parameter " << i);
      }
      reducer.zeroGrad();
      RANK_REQUIRE(reducer.flatGrad().abs().sum().item<float>() == 0.0f, "rank " << rank);
    }
  });
}

TEST_CASE("GradReducer refuses a plan that misses a parameter and mixed dtypes", "[runtime][ddp]") {
  using Catch::Matchers::Contains;
  runThreadWorld(1, [&](int, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    auto params = makeParams();
    auto plan = smallBuckets(params);
    plan.pop_back();
    REQUIRE_THROWS_WITH(GradReducer(params, pg, plan, true), Contains("plan misses parameter"));
    params[1] = params[1].detach().to(at::kDouble).set_requires_grad(true);
    REQUIRE_THROWS_WITH(GradReducer(params, pg, smallBuckets(params), true),
                        Contains("one dtype and device, parameter 1 is Double"));
  });
}
