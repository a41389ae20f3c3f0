#pragma once
// Distributed initialisation: the C++ counterpart of deepspeed.init_distributed(). Reads the rank
// environment (runtime/rank_env.h), creates a c10d store (TCPStore hosted by rank 0; an in-memory
// HashStore for a single rank) and the data-parallel process group: Gloo for CPU tensors, NCCL for
// CUDA tensors when libdsrt was built with CUDA and NCCL (DSRT_WITH_NCCL).

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "runtime/comms/comms_log.h"
#include "runtime/rank_env.h"

namespace dsrt {

/// Options of init_distributed(); the defaults suit a CPU job started by dsrun.
struct DistOptions {
  /// "auto" (NCCL when `cuda` is true and NCCL is built in, else Gloo), "gloo" or "nccl".
  std::string backend = "auto";
  /// Whether the model lives on a CUDA device (selects NCCL under "auto"; sets the device to LOCAL_RANK).
  bool cuda = false;
  /// Store and collective timeout. Default 30 minutes as torch and DeepSpeed (overridable with the
  /// DEEPSPEED_TIMEOUT environment variable, in minutes, as DeepSpeed does).
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
  /// Gloo worker threads (c10d's default is 2).
  int glooThreads = 2;
  /// Where the rank variables come from; processEnv() unless a test injects a map.
  EnvLookup env;
};

/// What init_distributed() built. Shared by the engine and the user (e.g. for their own collectives).
struct DistContext {
  RankEnv env;                                     ///< rank, worldSize, localRank, master address
  c10::intrusive_ptr<c10d::Store> store;           ///< TCPStore (or HashStore for one rank)
  c10::intrusive_ptr<c10d::ProcessGroup> pg;       ///< every rank; "gloo" or "nccl"
  std::string backend;                             ///< the backend actually chosen
  /// Where the engines on `pg` record their collectives for the comms logger; null records nothing.
  /// The Python package passes its deepspeed.comm logger's; a C++ program may set its own.
  std::shared_ptr<comms::CommsLog> commsLog;
};

/// Where a tensor for `pg`'s collectives must live: the current CUDA device for NCCL (it reduces only
/// device tensors: "No backend type associated with device type cpu"), the CPU for Gloo. For the small
/// agreement flags of checkpoints and saves.
at::Device collectiveDevice(const c10d::ProcessGroup& pg);

/// Creates the store and process group. Blocks until every rank has joined rank 0's store (or the
/// timeout expires). Throws c10::Error naming the missing/inconsistent variables, the unavailable
/// backend, or the master address that could not be reached.
std::shared_ptr<DistContext> init_distributed(DistOptions options = {});

}  // namespace dsrt
