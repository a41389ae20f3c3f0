#pragma once
// TreeProbeTally: one node's merge of a tree launch's mesh probe (docs/agent.md "The mesh probe in a tree").
// It collects this node's own MeshProbeReply and one TreeProbeReport (or a loss) per child, and once all are in
// gives the subtree's TreeProbeReport: broken pairs in pre-order (this node's first, then each child's in child
// order, which is host order), at most kMaxBrokenListed of them listed and all counted, so a report stays small
// however much of the network is cut. Pure: no I/O, no clocks.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proto/agent.pb.h"

namespace dsrun::agent {

class TreeProbeTally {
 public:
  /// Broken pairs a report lists (the rest are counted): enough to name the first in host order and to let an
  /// elastic job pick the hosts to leave out; a whole rack cut off is one line and a count.
  static constexpr size_t kMaxBrokenListed = 64;

  /// `host`: this node (TreeProbeBroken.from of its own pairs); `children`: how many reports to wait for.
  TreeProbeTally(std::string jobId, std::string host, size_t children);

  /// This node's own probe finished.
  void own(const wire::MeshProbeReply& reply);
  /// Child `index` (0-based, in the launch's order) reported; a second report of the same child is ignored.
  void child(size_t index, const wire::TreeProbeReport& report);
  /// Child `index` will not report: lost (its NodeLost went up), or an older agent holding `unprobedNodes` nodes.
  void childSilent(size_t index, uint64_t unprobedNodes = 0);

  /// Own probe and every child in.
  bool complete() const;
  /// The merged report; valid once complete().
  wire::TreeProbeReport report() const;

 private:
  std::string jobId_;
  std::string host_;
  std::optional<wire::MeshProbeReply> own_;                    ///< this node's results
  std::vector<std::optional<wire::TreeProbeReport>> children_;  ///< per child; set = answered
};

}  // namespace dsrun::agent
