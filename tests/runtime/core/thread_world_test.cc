#include "tests/runtime/core/thread_world.h"

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <stdexcept>

using dsrt::testing::runThreadWorld;

TEST_CASE("runThreadWorld gives each rank a working Gloo group and rethrows a rank's exception",
          "[runtime][core]") {
  for (int world : {1, 2, 4}) {
    std::vector<float> seen(world, 0.0f);
    runThreadWorld(world, [&](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
      RANK_REQUIRE(pg->getRank() == rank, "rank " << rank);
      RANK_REQUIRE(pg->getSize() == world, "rank " << rank);
      std::vector<at::Tensor> t{at::full({3}, float(rank + 1))};
      pg->allreduce(t)->wait();
      seen[rank] = t[0][2].item<float>();
    });
    for (float v : seen) {
      CHECK(v == Approx(world * (world + 1) / 2.0));
    }
  }
  REQUIRE_THROWS_WITH(runThreadWorld(2,
                                     [](int rank, const c10::intrusive_ptr<c10d::ProcessGroup>&) {
                                       if (rank == 1) {
                                         throw std::runtime_error("rank 1 failed");
                                       }
                                     }),
                      "rank 1 failed");
}
