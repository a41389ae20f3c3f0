#pragma once
// StoreReplayLog: a hub's answers to the writes it took from below, by the writes' identities (StoreWriteId), so
// that a write re-sent after a re-attach is answered as the first time and never applied twice
// (docs/rendezvous.md "Re-sent after a re-attach"). The root keeps one for every write it applied; every hub keeps
// one for the ADD sums it took from below and their parts: when an agent dies, its parent is the one that adopts
// its children, and it knows what the dead agent's sums held. Bounded: the oldest identities are forgotten first
// (a re-send comes within seconds of the loss; kCapacity writes is far more than a rendezvous makes in that time).
// Pure; loop-thread only.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "agent/store_result.h"
#include "proto/agent.pb.h"

namespace dsrun::agent {

class StoreReplayLog {
 public:
  using Done = std::function<void(const StoreResult&)>;
  static constexpr size_t kCapacity = 1u << 16;

  /// `write` was seen: `done` gets its answer now, or once it is known, and true comes back. Unseen: false.
  bool answer(const wire::StoreWriteId& write, Done done);
  /// `write` is being applied (alone or in a sum on its way up): a repeat waits for its answer (answer()).
  void expect(const wire::StoreWriteId& write);
  /// Its answer: given to those waiting, and to any repeat from now on.
  void fill(const wire::StoreWriteId& write, const StoreResult& result);
  /// It failed (the link above lost): forgotten, so a re-send applies it; those waiting get `result`.
  void fail(const wire::StoreWriteId& write, const StoreResult& result);

  size_t size() const { return slots_.size(); }

 private:
  using Key = std::pair<std::string, uint64_t>;
  struct Slot {
    bool known = false;
    StoreResult result;
    std::vector<Done> waiting;
  };
  static Key keyOf(const wire::StoreWriteId& write) { return {write.origin(), write.seq()}; }

  std::map<Key, Slot> slots_;
  std::deque<Key> order_;  ///< arrival order, for forgetting the oldest
};

}  // namespace dsrun::agent
