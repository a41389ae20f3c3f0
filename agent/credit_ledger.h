#pragma once
// CreditLedger: whose output the parent's OutputCredit gives back. A tree agent passes its children's output
// up inside its own output window (docs/agent.md "Output flow control"); each child has a window of its own
// towards this agent, refilled only as the parent returns credit for that child's bytes. The parent returns
// credit in the order the bytes were sent (it writes one connection's output in order), so the ledger
// attributes credit first in, first out. Pure: no sockets, no clocks. Loop-thread only.

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

namespace dsrun::agent {

class CreditLedger {
 public:
  /// Source id of this node's own ranks: their credit goes to nobody (the Session's window pauses them).
  static constexpr uint64_t kOwn = 0;

  /// `bytes` of output from `source` were sent up.
  void sent(uint64_t source, uint64_t bytes);
  /// The parent returned `bytes`: how many of them belong to each source, in the order they were sent
  /// (consecutive runs of one source merged; kOwn left out). Credit beyond what was sent is ignored.
  std::vector<std::pair<uint64_t, uint64_t>> credited(uint64_t bytes);
  /// A source is gone (its child was lost or closed): its bytes stay in line, but are owed to nobody.
  void forget(uint64_t source);
  /// Bytes sent and not yet credited, of every source.
  uint64_t outstanding() const { return outstanding_; }

 private:
  std::deque<std::pair<uint64_t, uint64_t>> runs_;  ///< (source, bytes) in the order sent
  uint64_t outstanding_ = 0;                        ///< sum of runs_
};

}  // namespace dsrun::agent
