#include "runtime/dist_env.h"

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <stdexcept>

#include "runtime/compat/process_group_compat.h"

#ifdef DSRT_WITH_NCCL
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace dsrt {
namespace {

bool isLoopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

// Which local address Gloo binds to. GLOO_SOCKET_IFNAME wins (torch's variable); a loopback master means
// a single-host job, so loopback is right; otherwise the address this host's name resolves to.
compat::GlooGroupOptions glooOptions(const RankEnv& env, const EnvLookup& lookup, std::chrono::milliseconds timeout,
                                     int threads) {
  compat::GlooGroupOptions options;
  options.timeout = timeout;
  options.threads = threads;
  if (auto ifname = lookup("GLOO_SOCKET_IFNAME"); ifname && !ifname->empty()) {
    options.interface = *ifname;
  } else if (isLoopback(env.masterAddr)) {
    options.hostname = "127.0.0.1";
  }
  return options;
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

at::Device collectiveDevice(const c10d::ProcessGroup& pg) {
  // No index: a tensor made for at::kCUDA lands on the current device, the one NCCL was set up on.
  return pg.getBackendName() == "nccl" ? at::Device(at::kCUDA) : at::Device(at::kCPU);
}

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
    ctx->pg = compat::makeGlooGroup(ctx->store, env.rank, env.worldSize,
                                    glooOptions(env, lookup, timeout, options.glooThreads));
  } else {
#ifdef DSRT_WITH_NCCL
    // No GPU (or no driver): one line saying so rather than CUDA's own error from set_device.
    const auto devices = c10::cuda::device_count();
    TORCH_CHECK(devices > 0, "distributed init: backend 'nccl' unavailable: no CUDA device is visible to rank ",
                env.rank, " (use backend gloo for a model on the CPU)");
    TORCH_CHECK(env.localRank < devices, "distributed init: backend 'nccl': LOCAL_RANK ", env.localRank,
                " has no device of its own, ", int(devices), " visible (one GPU per rank: check --num_gpus and "
                "CUDA_VISIBLE_DEVICES)");
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(env.localRank));
#endif
    ctx->pg = compat::makeNcclGroup(ctx->store, env.rank, env.worldSize, timeout);
  }
  return ctx;
}

}  // namespace dsrt
