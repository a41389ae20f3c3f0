#include "launcher/backends/agent/agent_mesh_plan.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <deque>
#include <set>

#include "common/error.h"

using dsrun::launcher::kMeshAllPairsUpTo;
using dsrun::launcher::meshProbePairCount;
using dsrun::launcher::meshProbePeers;

namespace {

size_t ceilLog2(size_t n) {
  size_t bits = 0;
  while ((size_t{1} << bits) < n) ++bits;
  return bits;
}

// Hops from `from` to every host over probed pairs (from -> peer), by breadth-first search; SIZE_MAX where
// no path exists.
std::vector<size_t> hopsFrom(size_t from, const std::vector<std::vector<size_t>>& peers) {
  std::vector<size_t> hops(peers.size(), SIZE_MAX);
  std::deque<size_t> queue{from};
  hops[from] = 0;
  while (!queue.empty()) {
    const size_t at = queue.front();
    queue.pop_front();
    for (size_t next : peers[at]) {
      if (hops[next] == SIZE_MAX) {
        hops[next] = hops[at] + 1;
        queue.push_back(next);
      }
    }
  }
  return hops;
}

std::vector<std::vector<size_t>> plan(size_t count) {
  std::vector<std::vector<size_t>> peers;
  for (size_t i = 0; i < count; ++i) peers.push_back(meshProbePeers(i, count));
  return peers;
}

}  // namespace

TEST_CASE("mesh plan: up to 16 hosts every host probes every other", "[launcher][agent][mesh]") {
  const size_t count = GENERATE(range(size_t{1}, kMeshAllPairsUpTo + 1));
  CAPTURE(count);
  CHECK(meshProbePairCount(count) == count * (count - 1));
  for (size_t i = 0; i < count; ++i) {
    const auto peers = meshProbePeers(i, count);
    CHECK(std::set<size_t>(peers.begin(), peers.end()).size() == count - 1);
    CHECK(std::find(peers.begin(), peers.end(), i) == peers.end());
  }
}

TEST_CASE("mesh plan: above 16 hosts each probes at most ceil(log2 N) + 1 distinct others",
          "[launcher][agent][mesh]") {
  const size_t count = GENERATE(17, 18, 31, 32, 33, 64, 100, 255, 256, 257, 1000, 1024, 10000);
  CAPTURE(count);
  const size_t bound = ceilLog2(count) + 1;
  size_t pairs = 0;
  for (size_t i = 0; i < count; ++i) {
    const auto peers = meshProbePeers(i, count);
    CAPTURE(i);
    CHECK(peers.size() <= bound);
    CHECK(std::set<size_t>(peers.begin(), peers.end()).size() == peers.size());
    CHECK(std::find(peers.begin(), peers.end(), i) == peers.end());
    CHECK(peers.back() < count);
    pairs += peers.size();
  }
  // Probed by at least ceil(log2 N) others: a host nobody can reach is caught by as many probes.
  std::vector<size_t> probedBy(count, 0);
  for (size_t i = 0; i < count; ++i) {
    for (size_t j : meshProbePeers(i, count)) ++probedBy[j];
  }
  CHECK(*std::min_element(probedBy.begin(), probedBy.end()) >= ceilLog2(count));
  CHECK(pairs == meshProbePairCount(count));
  CHECK(pairs <= count * bound);
  CHECK(pairs < count * (count - 1));
}

TEST_CASE("mesh plan: every host probes the hosts 1, 2, 4, ... after it in host order, and host 0",
          "[launcher][agent][mesh]") {
  const size_t count = GENERATE(17, 50, 256, 1000);
  CAPTURE(count);
  for (size_t i = 0; i < count; ++i) {
    const auto peers = meshProbePeers(i, count);
    CAPTURE(i);
    for (size_t distance = 1; distance < count; distance *= 2) {
      CAPTURE(distance);
      CHECK(std::count(peers.begin(), peers.end(), (i + distance) % count) == 1);
    }
    if (i != 0) CHECK(std::count(peers.begin(), peers.end(), size_t{0}) == 1);
  }
}

TEST_CASE("mesh plan: every host reaches every other over at most ceil(log2 N) probed hops",
          "[launcher][agent][mesh]") {
  // So every split of the hosts into two groups has a probed pair from each group into the other: a switch,
  // rack or subnet cut off from the rest cannot pass the probe.
  const size_t count = GENERATE(17, 20, 33, 64, 97, 128, 200, 256);
  CAPTURE(count);
  const auto peers = plan(count);
  for (size_t from = 0; from < count; ++from) {
    const auto hops = hopsFrom(from, peers);
    CAPTURE(from);
    CHECK(*std::max_element(hops.begin(), hops.end()) <= ceilLog2(count));
  }
}

TEST_CASE("mesh plan: a block of consecutive hosts (a rack) has probed pairs out of it and into it",
          "[launcher][agent][mesh]") {
  // At least min(block, rest) pairs each way: one per host of the smaller side, so that a partial cut
  // that breaks some of a rack's links is met by several probes, not one.
  const size_t count = GENERATE(17, 40, 100);
  CAPTURE(count);
  const auto peers = plan(count);
  for (size_t begin = 0; begin < count; ++begin) {
    for (size_t size = 1; size < count; ++size) {
      std::vector<bool> inside(count, false);
      for (size_t k = 0; k < size; ++k) inside[(begin + k) % count] = true;
      size_t out = 0, in = 0;
      for (size_t i = 0; i < count; ++i) {
        for (size_t j : peers[i]) {
          if (inside[i] && !inside[j]) ++out;
          if (!inside[i] && inside[j]) ++in;
        }
      }
      CAPTURE(begin, size);
      CHECK(out >= std::min(size, count - size));
      CHECK(in >= std::min(size, count - size));
    }
  }
}

TEST_CASE("mesh plan: a host outside the job is an internal error", "[launcher][agent][mesh]") {
  CHECK_THROWS_AS(meshProbePeers(3, 3), dsrun::InternalError);
}
