#pragma once
// The engine's side of the comms_logger block. DeepSpeed's engine issues its collectives through
// deepspeed.comm, whose timed_op records each one; libdsrt calls c10d directly, so it records here what
// deepspeed.comm would have: the op under deepspeed.comm's name, the message bytes as timed_op measures them
// (the tensor argument, i.e. the input) and the latency in milliseconds. The Python package drains the
// records into its CommsLogger (python/dsrt/utils/comms_logging.py), which prints DeepSpeed's table.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace dsrt::comms {

/// deepspeed.comm's names for the collectives the engine issues.
inline constexpr const char* kAllReduce = "all_reduce";
inline constexpr const char* kReduceScatterTensor = "reduce_scatter_tensor";
inline constexpr const char* kAllGatherIntoTensor = "all_gather_into_tensor";
inline constexpr const char* kBroadcast = "broadcast";

/// One completed collective.
struct CommRecord {
  std::string op;           ///< deepspeed.comm's name (kAllReduce, ...)
  int64_t bytes = 0;        ///< message size: bytes of the input tensor
  double latencyMs = 0.0;   ///< from issue to completion
};

/// Recorder shared by the engines on one process group (DistContext::commsLog). Disabled until
/// configure() enables it; while disabled, wants() is one relaxed atomic load and nothing is recorded.
/// Thread-safe: completion callbacks run on the backend's threads.
class CommsLog {
 public:
  /// DeepSpeed's switches (comms_logger.enabled, prof_all, prof_ops): an op is recorded when the log is
  /// enabled and either prof_all is set or the op's name is in prof_ops.
  void configure(bool enabled, bool profAll, std::vector<std::string> profOps);
  /// Whether a collective named `op` issued now is to be recorded.
  bool wants(const char* op) const;
  /// Appends one record.
  void record(CommRecord r);
  /// The records since the previous take(), in completion order; the log keeps none of them.
  std::vector<CommRecord> take();

 private:
  std::atomic<bool> enabled_{false};  ///< read without the mutex on every collective
  mutable std::mutex mutex_;          ///< guards everything below
  bool profAll_ = true;
  std::vector<std::string> profOps_;
  std::vector<CommRecord> records_;
};

}  // namespace dsrt::comms
