#include "runtime/dist_env.h"

#include <ATen/ATen.h>
#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

dsrt::EnvLookup lookupIn(std::map<std::string, std::string> env) {
  return [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

// A port the kernel just handed out (then released), so parallel test runs do not collide.
int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

TEST_CASE("init_distributed builds a TCPStore and Gloo group that 1, 2 and 3 ranks can allreduce over, and "
          "refuses missing variables, bad timeouts and an unbuilt NCCL",
          "[runtime][core]") {
  using Catch::Matchers::Contains;
  for (int world : {1, 2, 3}) {
    const std::string port = std::to_string(freePort());
    std::vector<float> sums(world, 0.0f);
    std::vector<std::string> backends(world);
    std::vector<std::thread> ranks;
    for (int r = 0; r < world; ++r) {
      ranks.emplace_back([&, r] {
        dsrt::DistOptions opts;
        opts.timeout = std::chrono::seconds(30);
        opts.env = lookupIn({{"RANK", std::to_string(r)}, {"WORLD_SIZE", std::to_string(world)},
                             {"LOCAL_RANK", std::to_string(r)}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}});
        auto ctx = dsrt::init_distributed(opts);
        std::vector<at::Tensor> t{at::full({2}, float(r + 1))};
        ctx->pg->allreduce(t)->wait();
        sums[r] = t[0][1].item<float>();
        backends[r] = ctx->backend;
      });
    }
    for (auto& t : ranks) {
      t.join();
    }
    for (int r = 0; r < world; ++r) {
      CHECK(sums[r] == Approx(world * (world + 1) / 2.0));
      CHECK(backends[r] == "gloo");
    }
  }

  dsrt::DistOptions missing;
  missing.env = lookupIn({{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  REQUIRE_THROWS_AS(dsrt::init_distributed(missing), c10::Error);
  REQUIRE_THROWS_WITH(dsrt::init_distributed(missing), Contains("distributed init: missing MASTER_ADDR"));

  dsrt::DistOptions badTimeout;
  badTimeout.env = lookupIn({{"DEEPSPEED_TIMEOUT", "soon"}});
  REQUIRE_THROWS_WITH(dsrt::init_distributed(badTimeout), Contains("DEEPSPEED_TIMEOUT must be a positive number"));

  dsrt::DistOptions nccl;
  nccl.env = lookupIn({});
  nccl.backend = "nccl";
#ifndef DSRT_WITH_NCCL
  REQUIRE_THROWS_WITH(dsrt::init_distributed(nccl), Contains("backend 'nccl' unavailable"));
#endif
  nccl.backend = "mpi";
  REQUIRE_THROWS_WITH(dsrt::init_distributed(nccl), Contains("backend must be auto, gloo or nccl, got 'mpi'"));

  // Nobody listens on the master port: rank 1's store connection times out with the address in the message.
  dsrt::DistOptions unreachable;
  unreachable.timeout = std::chrono::milliseconds(300);
  unreachable.env = lookupIn({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"},
                              {"MASTER_PORT", std::to_string(freePort())}});
  REQUIRE_THROWS_WITH(dsrt::init_distributed(unreachable), Contains("store at 127.0.0.1:"));
}
