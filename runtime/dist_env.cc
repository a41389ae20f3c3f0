#include "runtime/dist_env.h"

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <stdexcept>

#ifdef DSRT_WITH_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace dsrt {
namespace {

bool isLoopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

// Which local address Gloo binds to. GLOO_SOCKET_IFNAME wins (torch's variable); a loopback master means
// a single-host job, so loopback is right; otherwise the address this host's name resolves to.
std::shared_ptr<::gloo::transport::Device> glooDevice(const RankEnv& env, const EnvLookup& lookup) {
  if (auto ifname = lookup("GLOO_SOCKET_IFNAME"); ifname && !ifname->empty()) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(*ifname);
  }
  if (isLoopback(env.masterAddr)) {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

std::chrono::milliseconds timeoutFrom(const DistOptions& options, const EnvLookup& lookup) {
  if (auto minutes = lookup("DEEPSPEED_TIMEOUT"); minutes && !minutes->empty()) {
    try {
      size_t used = 0;
      long v = std::stol(*minutes, &used);
      TORCH_CHECK(used == minutes->size() && v > 0, "");
      return std::chrono::minutes(v);
    } catch (const std::exception&) {
      TORCH_CHECK(false, "distributed init: DEEPSPEED_TIMEOUT must be a positive number of minutes, got '",
                  *minutes, "'");
    }
  }
  return options.timeout;
}

}  // namespace

std::shared_ptr<DistContext> init_distributed(DistOptions options) {
  EnvLookup lookup = options.env ? options.env : processEnv();
  auto ctx = std::make_shared<DistContext>();
  try {
    ctx->env = resolveRankEnv(lookup);
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK(false, e.what());
  }
  const RankEnv& env = ctx->env;
  const auto timeout = timeoutFrom(options, lookup);

  std::string backend = options.backend;
  if (backend == "auto") {
    backend = options.cuda ? "nccl" : "gloo";
  }
  TORCH_CHECK(backend == "gloo" || backend == "nccl", "distributed init: backend must be auto, gloo or nccl, got '",
              options.backend, "'");
#ifndef DSRT_WITH_NCCL
  TORCH_CHECK(backend != "nccl", "distributed init: backend 'nccl' unavailable: this libdsrt was built without "
              "CUDA and NCCL (rebuild with -DDSRUN_WITH_CUDA=ON against a CUDA LibTorch, or use gloo on CPU)");
#endif
  ctx->backend = backend;

  if (env.worldSize == 1) {
    ctx->store = c10::make_intrusive<c10d::HashStore>();
  } else {
    c10d::TCPStoreOptions so;
    so.port = static_cast<std::uint16_t>(env.masterPort);
    so.isServer = env.rank == 0;
    so.numWorkers = static_cast<size_t>(env.worldSize);
    so.waitWorkers = true;
    so.timeout = timeout;
    try {
      ctx->store = c10::make_intrusive<c10d::TCPStore>(env.masterAddr, so);
    } catch (const std::exception& e) {
      TORCH_CHECK(false, "distributed init: rank ", env.rank, " of ", env.worldSize, ": store at ", env.masterAddr,
                  ":", env.masterPort, " (MASTER_ADDR:MASTER_PORT, from ", env.source, "): ",
                  c10::GetExceptionString(e));
    }
  }

  if (backend == "gloo") {
    auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
    opts->devices.push_back(glooDevice(env, lookup));
    opts->threads = options.glooThreads;
    ctx->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(ctx->store, env.rank, env.worldSize, opts);
  } else {
#ifdef DSRT_WITH_NCCL
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(env.localRank));
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = timeout;
    ctx->pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(ctx->store, env.rank, env.worldSize, opts);
#endif
  }
  return ctx;
}

}  // namespace dsrt
