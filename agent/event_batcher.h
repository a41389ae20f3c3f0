#pragma once
// EventBatcher: coalesces the events a tree agent passes up (its own ranks' and its subtree's) into
// EventBatch messages, so that a parent reads one frame where several events were ready in the same turn of
// the loop instead of one per event. A received batch is flattened (batches never nest), and a batch is
// closed at kMaxBatchBytes so that no frame nears the 16 MiB frame limit. Pure. Loop-thread only.

#include <cstddef>
#include <vector>

#include "proto/agent.pb.h"

namespace dsrun::agent {

class EventBatcher {
 public:
  /// A batch is closed once its events reach this size (one 64 KiB output chunk is the usual event).
  static constexpr size_t kMaxBatchBytes = 1u << 20;

  /// Adds one event (an EventBatch's events one by one). Returns true when nothing was pending before: the
  /// caller schedules one take() for the end of this turn of the loop.
  bool add(const wire::Envelope& event);
  /// The pending events as envelopes to send, in order: a lone event as itself, several as EventBatches of at
  /// most kMaxBatchBytes each (a larger single event alone). `merged`: the receiver reads RanksStarted and
  /// RanksExited (Hello.merged_rank_events), so runs of starts and of clean exits leave merged
  /// (proto::mergeRankEvents); otherwise merged ones from below are expanded. Empties the batcher.
  std::vector<wire::Envelope> take(bool merged = false);
  bool empty() const { return pending_.empty(); }

 private:
  std::vector<wire::Envelope> pending_;  ///< events not yet taken, in order
};

/// The OutputChunk bytes in `envelope`: an OutputChunk's data, or the sum over an EventBatch's chunks.
uint64_t outputBytes(const wire::Envelope& envelope);

}  // namespace dsrun::agent
