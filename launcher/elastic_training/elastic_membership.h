#pragma once
// ElasticMembership: who is in an elastic job's next world (--elastic_training). Pure bookkeeping, told
// which hosts' agents answer, which hosts failed and the time; the controller (elastic_job.h) acts on
// its answers. Rules:
// - the world is the most healthy answering hosts, at most maxNodes and at least minNodes, ranked by
//   failures (fewest first) then hostfile order, and laid out in hostfile order;
// - with valid world sizes (an `elasticity` block), the largest such prefix whose slot total is valid;
// - a host that fails twice in a row is blacklisted with an exponential cool-down (10 s, 20 s, ... 300 s,
//   Horovod's idea) and readmitted after it; a round that runs kHealthyRoundS without failing clears strikes.

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/resource_spec.h"

namespace dsrun::launcher {

class ElasticMembership {
 public:
  /// A round that ran this long clears the strikes of its hosts.
  static constexpr double kHealthyRoundS = 60;

  /// `candidates` in hostfile order; 1 <= minNodes <= maxNodes.
  ElasticMembership(ResourcePool candidates, int minNodes, int maxNodes);

  /// Total slot counts the world may have (from ds_config's elasticity block); empty: any.
  void setValidWorldSizes(std::vector<int> sizes) { validSizes_ = std::move(sizes); }

  /// `host` failed at `now` (lost, or one of its ranks failed): one more strike; from the second strike in
  /// a row it cools down 10 s * 2^(strikes-2), at most 300 s.
  void hostFailed(const std::string& host, double now);
  /// `host` cannot reach the others of its world (the mesh probe): it cools down at once, as from a second
  /// strike, because a world with it would fail the same way before its first step.
  void hostPartitioned(const std::string& host, double now);
  /// The hosts of a round that ran `roundS` seconds without a failure of theirs.
  void roundSurvived(const std::vector<std::string>& hosts, double roundS);

  /// True when `host` is a candidate not cooling down at `now`.
  bool usable(const std::string& host, double now) const;
  /// Seconds from `now` until `host` is readmitted (0 if usable).
  double coolDownLeft(const std::string& host, double now) const;

  /// The next world from the hosts whose agents answered, in hostfile order; nullopt when fewer than
  /// minNodes are usable (or no prefix has a valid size).
  std::optional<ResourcePool> choose(const std::set<std::string>& answering, double now) const;
  /// Candidates that are not usable now (not answering, or cooling down), each with the reason;
  /// `notAnswering` says why a host missing from `answering` is ("agent not answering", "ssh not answering").
  std::vector<std::string> unavailable(const std::set<std::string>& answering, double now,
                                       const std::string& notAnswering = "agent not answering") const;

  int minNodes() const { return minNodes_; }
  int maxNodes() const { return maxNodes_; }
  const ResourcePool& candidates() const { return candidates_; }

 private:
  struct Health {
    int strikes = 0;        ///< failures in a row
    double coolUntil = 0;   ///< not usable before this time
    bool partitioned = false;  ///< the last cool-down came from the mesh probe, not from failures
  };
  size_t indexOf(const std::string& host) const;  ///< candidates_.size() if not a candidate
  const Health* health(const std::string& host) const;

  ResourcePool candidates_;
  std::vector<Health> health_;  ///< parallel to candidates_
  int minNodes_;
  int maxNodes_;
  std::vector<int> validSizes_;
};

}  // namespace dsrun::launcher
