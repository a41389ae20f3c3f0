#include "runtime/zero/reduce_bucket_plan.h"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <tuple>
#include <vector>

using dsrt::zero::planPartition;
using dsrt::zero::planReduceBuckets;
using dsrt::zero::ReduceBucket;
using Catch::Matchers::Contains;

namespace {
using Range = std::tuple<int64_t, int64_t, int64_t, int64_t>;  // firstParam, endParam, flatBegin, flatEnd
std::vector<Range> ranges(const std::vector<ReduceBucket>& buckets) {
  std::vector<Range> out;
  for (const auto& b : buckets) {
    out.emplace_back(b.firstParam, b.endParam, b.flatBegin, b.flatEnd);
  }
  return out;
}
}  // namespace

TEST_CASE("planReduceBuckets fills buckets from the last parameter and closes before the cap",
          "[runtime][zero]") {
  using Numels = std::vector<int64_t>;
  auto [numels, world, cap, expected] = GENERATE(table<Numels, int, int64_t, std::vector<Range>>({
      // everything fits: one bucket, padding included
      {Numels{10, 7, 3}, 4, 100, {Range{0, 3, 0, 24}}},
      // cap 10: [p2 p1]=10 fits exactly, p0 alone
      {Numels{10, 7, 3}, 4, 10, {Range{1, 3, 10, 24}, Range{0, 1, 0, 10}}},
      // cap 9: p2 alone (p1 would make 10), p1 alone, p0 (larger than the cap) alone
      {Numels{10, 7, 3}, 4, 9, {Range{2, 3, 17, 24}, Range{1, 2, 10, 17}, Range{0, 1, 0, 10}}},
      // cap 1: one parameter per bucket
      {Numels{2, 2}, 1, 1, {Range{1, 2, 2, 4}, Range{0, 1, 0, 2}}},
      // a zero-element parameter rides along
      {Numels{4, 0, 4}, 2, 4, {Range{1, 3, 4, 8}, Range{0, 1, 0, 4}}},
      {Numels{}, 2, 4, {}},
  }));
  auto plan = planPartition(numels, world);
  auto buckets = planReduceBuckets(plan, cap);
  CHECK(ranges(buckets) == expected);
}

TEST_CASE("planReduceBuckets cuts every bucket into per-rank runs that follow the partitions",
          "[runtime][zero]") {
  std::vector<int64_t> numels = GENERATE(std::vector<int64_t>{10, 7, 3}, std::vector<int64_t>{1, 1, 1, 1, 1},
                                         std::vector<int64_t>{64, 3, 128, 5, 1});
  int world = GENERATE(1, 2, 3, 4);
  int64_t cap = GENERATE(1, 5, 16, 1000);
  auto plan = planPartition(numels, world);
  auto buckets = planReduceBuckets(plan, cap);
  int64_t covered = 0;
  std::vector<int64_t> perRank(static_cast<size_t>(world), 0);
  for (const auto& b : buckets) {
    int64_t sum = 0;
    for (int r = 0; r < world; ++r) {
      int64_t n = b.rankNumels[static_cast<size_t>(r)];
      if (n > 0) {
        // the run of rank r starts inside rank r's partition
        CHECK(plan.ownerOf(b.flatBegin + b.rankOffset(r)) == r);
      }
      sum += n;
      perRank[static_cast<size_t>(r)] += n;
    }
    CHECK(sum == b.numel());
    covered += b.numel();
  }
  CHECK(covered == plan.paddedNumel);
  for (int r = 0; r < world; ++r) {
    CHECK(perRank[static_cast<size_t>(r)] == plan.partitionNumel);
  }
  auto owner = dsrt::zero::bucketOfParam(buckets, static_cast<int64_t>(numels.size()));
  for (auto b : owner) {
    CHECK(b >= 0);
  }
}

TEST_CASE("planReduceBuckets rejects a non-positive bucket size naming the config key", "[runtime][zero]") {
  auto plan = planPartition({4}, 2);
  REQUIRE_THROWS_WITH(planReduceBuckets(plan, 0), Contains("reduce_bucket_size must be >= 1, got '0'"));
}

TEST_CASE("evenChunk is the longest per-rank run, so rank r's run fits at r * evenChunk()", "[runtime][zero]") {
  using Counts = std::vector<int64_t>;
  auto [counts, chunk] = GENERATE(table<Counts, int64_t>({
      {Counts{0, 12, 0, 0}, 12},  // inside one partition: padded to worldSize x the bucket
      {Counts{3, 9}, 9},          // straddling two
      {Counts{6, 6, 6}, 6},       // already even: no padding
      {Counts{}, 0},
  }));
  ReduceBucket b;
  b.rankNumels = counts;
  CHECK(b.evenChunk() == chunk);
  for (size_t r = 0; r < counts.size(); ++r) {
    CHECK(counts[r] <= b.evenChunk());
  }
}
