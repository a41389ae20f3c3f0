#include "launcher/elastic_training/elastic_membership.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/strings.h"

namespace dsrun::launcher {

namespace {

constexpr double kFirstCoolDownS = 10;
constexpr double kMaxCoolDownS = 300;

}  // namespace

ElasticMembership::ElasticMembership(ResourcePool candidates, int minNodes, int maxNodes)
    : candidates_(std::move(candidates)), health_(candidates_.size()), minNodes_(minNodes), maxNodes_(maxNodes) {}

size_t ElasticMembership::indexOf(const std::string& host) const {
  for (size_t i = 0; i < candidates_.size(); ++i) {
    if (candidates_[i].host == host) return i;
  }
  return candidates_.size();
}

const ElasticMembership::Health* ElasticMembership::health(const std::string& host) const {
  const size_t i = indexOf(host);
  return i < health_.size() ? &health_[i] : nullptr;
}

void ElasticMembership::hostFailed(const std::string& host, double now) {
  const size_t i = indexOf(host);
  if (i == health_.size()) return;
  Health& h = health_[i];
  h.partitioned = false;
  ++h.strikes;
  if (h.strikes >= 2) {
    h.coolUntil = now + std::min(kMaxCoolDownS, kFirstCoolDownS * std::pow(2.0, h.strikes - 2));
  }
}

void ElasticMembership::hostPartitioned(const std::string& host, double now) {
  const size_t i = indexOf(host);
  if (i == health_.size()) return;
  health_[i].strikes = std::max(health_[i].strikes, 1);
  hostFailed(host, now);
  health_[i].partitioned = true;
}

void ElasticMembership::roundSurvived(const std::vector<std::string>& hosts, double roundS) {
  if (roundS < kHealthyRoundS) return;
  for (const std::string& host : hosts) {
    const size_t i = indexOf(host);
    if (i < health_.size()) health_[i].strikes = 0;
  }
}

bool ElasticMembership::usable(const std::string& host, double now) const {
  const Health* h = health(host);
  return h != nullptr && now >= h->coolUntil;
}

double ElasticMembership::coolDownLeft(const std::string& host, double now) const {
  const Health* h = health(host);
  return h == nullptr ? 0 : std::max(0.0, h->coolUntil - now);
}

std::optional<ResourcePool> ElasticMembership::choose(const std::set<std::string>& answering, double now) const {
  std::vector<size_t> ready;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    if (answering.count(candidates_[i].host) > 0 && usable(candidates_[i].host, now)) ready.push_back(i);
  }
  // Healthiest first; hostfile order breaks ties (stable sort).
  std::stable_sort(ready.begin(), ready.end(),
                   [this](size_t a, size_t b) { return health_[a].strikes < health_[b].strikes; });
  for (int n = std::min<int>(maxNodes_, static_cast<int>(ready.size())); n >= minNodes_; --n) {
    std::vector<size_t> chosen(ready.begin(), ready.begin() + n);
    size_t slots = 0;
    for (size_t i : chosen) slots += candidates_[i].slots.size();
    if (!validSizes_.empty() &&
        std::find(validSizes_.begin(), validSizes_.end(), static_cast<int>(slots)) == validSizes_.end()) {
      continue;
    }
    std::sort(chosen.begin(), chosen.end());
    ResourcePool world;
    for (size_t i : chosen) world.push_back(candidates_[i]);
    return world;
  }
  return std::nullopt;
}

std::vector<std::string> ElasticMembership::unavailable(const std::set<std::string>& answering, double now,
                                                       const std::string& notAnswering) const {
  std::vector<std::string> out;
  for (const HostSlots& c : candidates_) {
    if (answering.count(c.host) == 0) {
      out.push_back(strCat(c.host, " (", notAnswering, ")"));
    } else if (!usable(c.host, now)) {
      out.push_back(strCat(c.host, " (blacklisted after ",
                           health_[indexOf(c.host)].partitioned ? "it could not reach the other hosts"
                                                                : "repeated failures",
                           " for ", static_cast<int>(std::ceil(coolDownLeft(c.host, now))), " more s)"));
    }
  }
  return out;
}

}  // namespace dsrun::launcher
