// Measures the reduce-scatter candidates for Gloo in torch 1.13 (no reduce_scatter there): allreduce
// + keep the slice, alltoall_base + local sum (what BucketReducer uses), a ring of send/recv, and N
// reduces to each owner; plus an allgather of the same size. Real processes, one per rank:
//   cmake --build build --target zero_reduce_scatter_bench
//   for r in 0 1; do RANK=$r WORLD_SIZE=2 MASTER_PORT=29611 NUMEL=4194304 build/tests/runtime/zero/zero_reduce_scatter_bench & done; wait
// Rank 0 prints the median and minimum of 12 timed calls per method (barrier before each), twice,
// then every rank checks that the ring and alltoall results equal the allreduce's.
// Results on the project machine are in docs/zero.md.
#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "runtime/compat/process_group_compat.h"

namespace {

using Clock = std::chrono::steady_clock;

int64_t envInt(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) {
    std::fprintf(stderr, "zero_reduce_scatter_bench: environment variable %s is not set\n", name);
    std::exit(2);
  }
  return std::stoll(v);
}

}  // namespace

int main() {
  const int rank = static_cast<int>(envInt("RANK"));
  const int world = static_cast<int>(envInt("WORLD_SIZE"));
  c10d::TCPStoreOptions so;
  so.port = static_cast<uint16_t>(envInt("MASTER_PORT"));
  so.isServer = rank == 0;
  so.numWorkers = world;
  so.waitWorkers = true;
  auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", so);
  dsrt::compat::GlooGroupOptions opts;
  opts.timeout = std::chrono::seconds(60);
  opts.hostname = "127.0.0.1";
  opts.threads = 2;
  auto pg = dsrt::compat::makeGlooGroup(store, rank, world, opts);

  const int64_t c = envInt("NUMEL") / world;  // this rank's run
  const int64_t n = c * world;
  at::Tensor buf = at::rand({n});
  at::Tensor out = at::zeros({c});
  at::Tensor scratch = at::empty({n});
  at::Tensor tmp = at::empty({c});
  at::Tensor param = at::rand({n});

  std::vector<std::pair<const char*, std::function<void()>>> methods;
  methods.emplace_back("allreduce+slice", [&] {
    scratch.copy_(buf);
    std::vector<at::Tensor> t{scratch};
    pg->allreduce(t)->wait();
    out.copy_(scratch.narrow(0, rank * c, c));
  });
  methods.emplace_back("alltoall+sum", [&] {
    std::vector<int64_t> counts(static_cast<size_t>(world), c);
    dsrt::compat::allToAllSingle(*pg, scratch, buf, counts, counts)->wait();
    at::sum_out(out, scratch.view({world, c}), {0});
  });
  methods.emplace_back("ring send/recv", [&] {
    scratch.copy_(buf);
    const int next = (rank + 1) % world;
    const int prev = (rank + world - 1) % world;
    for (int k = 0; k < world - 1; ++k) {
      const int send = (rank - k - 1 + 2 * world) % world;
      const int recv = (rank - k - 2 + 2 * world) % world;
      std::vector<at::Tensor> st{scratch.narrow(0, send * c, c)};
      std::vector<at::Tensor> rt{tmp};
      auto sw = pg->send(st, next, k);
      auto rw = pg->recv(rt, prev, k);
      rw->wait();
      scratch.narrow(0, recv * c, c).add_(tmp);
      sw->wait();
    }
    out.copy_(scratch.narrow(0, rank * c, c));
  });
  methods.emplace_back("N x reduce", [&] {
    scratch.copy_(buf);
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (int d = 0; d < world; ++d) {
      std::vector<at::Tensor> t{scratch.narrow(0, d * c, c)};
      c10d::ReduceOptions ro;
      ro.rootRank = d;
      works.push_back(pg->reduce(t, ro));
    }
    for (auto& w : works) {
      w->wait();
    }
    out.copy_(scratch.narrow(0, rank * c, c));
  });
  methods.emplace_back("allgather", [&] {
    std::vector<std::vector<at::Tensor>> o(1);
    for (int j = 0; j < world; ++j) {
      o[0].push_back(param.narrow(0, j * c, c));
    }
    std::vector<at::Tensor> in{param.narrow(0, rank * c, c)};
    pg->allgather(o, in)->wait();
  });

  for (int rep = 0; rep < 2; ++rep) {
    for (auto& [name, fn] : methods) {
      std::vector<double> ms;
      for (int i = 0; i < 12; ++i) {
        pg->barrier()->wait();
        auto t0 = Clock::now();
        fn();
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      }
      std::sort(ms.begin(), ms.end());
      if (rank == 0) {
        std::printf("world %d numel %lld %-16s median %.2f ms min %.2f ms\n", world, static_cast<long long>(n), name,
                    ms[ms.size() / 2], ms[0]);
      }
    }
  }
  // Every method must produce the same reduce-scatter (sum of rank + 1 over ranks).
  const double expected = world * (world + 1) / 2.0;
  int bad = 0;
  for (size_t m = 0; m < 4; ++m) {
    buf.fill_(rank + 1);
    methods[m].second();
    if (!at::allclose(out, at::full({c}, expected))) {
      std::fprintf(stderr, "rank %d: %s gave a wrong reduce-scatter\n", rank, methods[m].first);
      bad = 1;
    }
  }
  return bad;
}
