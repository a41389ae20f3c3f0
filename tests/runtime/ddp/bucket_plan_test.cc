#include "runtime/ddp/bucket_plan.h"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

using dsrt::ddp::Bucket;
using dsrt::ddp::ParamSize;
using dsrt::ddp::planBuckets;
using Indices = std::vector<std::vector<int64_t>>;

namespace {

std::vector<ParamSize> fp32(const std::vector<int64_t>& numels) {
  std::vector<ParamSize> out;
  for (int64_t n : numels) {
    out.push_back(ParamSize{n, 4, 0});
  }
  return out;
}

Indices indicesOf(const std::vector<Bucket>& buckets) {
  Indices out;
  for (const auto& b : buckets) {
    out.push_back(b.params);
  }
  return out;
}

}  // namespace

TEST_CASE("planBuckets takes parameters in reverse order with a small first bucket, then bucketBytes",
          "[runtime][ddp]") {
  // numels of fp32 params, first cap (bytes), rest cap (bytes), expected param indices per bucket
  auto [numels, first, rest, expected] = GENERATE(table<std::vector<int64_t>, int64_t, int64_t, Indices>({
      {{10, 10, 10, 10}, 40, 80, {{3}, {2, 1}, {0}}},           // first bucket holds one param
      {{10, 10, 10, 10}, 80, 80, {{3, 2}, {1, 0}}},              // caps equal
      {{10, 10, 10, 10}, 1000, 1000, {{3, 2, 1, 0}}},            // everything fits: one bucket
      {{100, 1, 1, 1}, 8, 8, {{3, 2}, {1, 0}}},                  // big param closes the bucket it joins
      {{1, 1000, 1}, 8, 100, {{2, 1}, {0}}},                     // an oversized param is not split
      {{5}, 4, 4, {{0}}},                                        // single param larger than any cap
      {{0, 10, 0, 10}, 1000, 1000, {{3, 1}}},                    // zero-element params are skipped
      {{}, 4, 4, {}},                                            // no params: no buckets
      {{256 * 1024, 256 * 1024 - 1, 1}, int64_t{1} << 20, 4, {{2, 1}, {0}}},  // exactly 1 MiB closes the first
  }));
  auto buckets = planBuckets(fp32(numels), first, rest);
  CHECK(indicesOf(buckets) == expected);
}

TEST_CASE("planBuckets lays each bucket out back to back and counts its bytes", "[runtime][ddp]") {
  auto buckets = planBuckets(fp32({3, 5, 7, 11}), 48, 1000);
  REQUIRE(buckets.size() == 2);
  CHECK(buckets[0].params == std::vector<int64_t>{3, 2});
  CHECK(buckets[0].offsets == std::vector<int64_t>{0, 11});
  CHECK(buckets[0].numel == 18);
  CHECK(buckets[0].bytes == 72);
  CHECK(buckets[1].params == std::vector<int64_t>{1, 0});
  CHECK(buckets[1].offsets == std::vector<int64_t>{0, 5});
  CHECK(buckets[1].numel == 8);
  CHECK(buckets[1].bytes == 32);
}

TEST_CASE("planBuckets never mixes group keys and gives each key its own small first bucket", "[runtime][ddp]") {
  // params 0..5; keys alternate fp32 (0) and fp16 (1, 2-byte elements)
  std::vector<ParamSize> params{{8, 4, 0}, {8, 2, 1}, {8, 4, 0}, {8, 2, 1}, {8, 4, 0}, {8, 2, 1}};
  auto buckets = planBuckets(params, 16, 64);
  // fp16 param 5 (16 bytes) closes key 1's first bucket; fp32 param 4 (32 bytes) closes key 0's;
  // then key 1 collects 3,1 (32 bytes) and key 0 collects 2,0 (64 bytes, closes at the cap).
  REQUIRE(indicesOf(buckets) == Indices{{5}, {4}, {2, 0}, {3, 1}});
  for (const auto& b : buckets) {
    for (int64_t p : b.params) {
      CHECK(params[static_cast<size_t>(p)].groupKey == b.groupKey);
    }
  }
  CHECK(buckets[3].bytes == 32);
}

TEST_CASE("planBuckets covers every non-empty parameter exactly once for any caps", "[runtime][ddp]") {
  auto first = GENERATE(int64_t{1}, int64_t{7}, int64_t{64}, int64_t{1} << 20);
  auto rest = GENERATE(int64_t{1}, int64_t{13}, int64_t{100}, int64_t{1} << 30);
  std::vector<int64_t> numels{1, 2, 3, 0, 5, 8, 13, 21, 34};
  auto buckets = planBuckets(fp32(numels), first, rest);
  std::vector<int> seen(numels.size(), 0);
  int64_t previous = static_cast<int64_t>(numels.size());
  for (const auto& b : buckets) {
    REQUIRE(!b.params.empty());
    int64_t n = 0;
    for (size_t k = 0; k < b.params.size(); ++k) {
      CHECK(b.params[k] < previous);  // strictly reverse parameter order across all buckets
      previous = b.params[k];
      CHECK(b.offsets[k] == n);
      n += numels[static_cast<size_t>(b.params[k])];
      ++seen[static_cast<size_t>(b.params[k])];
    }
    CHECK(b.numel == n);
  }
  for (size_t i = 0; i < numels.size(); ++i) {
    CHECK(seen[i] == (numels[i] == 0 ? 0 : 1));
  }
}

TEST_CASE("planBuckets rejects non-positive caps and element sizes", "[runtime][ddp]") {
  using Catch::Matchers::Contains;
  REQUIRE_THROWS_WITH(planBuckets(fp32({1}), 0, 4), Contains("bucket caps must be positive, got first=0"));
  REQUIRE_THROWS_WITH(planBuckets(fp32({1}), 4, -1), Contains("rest=-1"));
  REQUIRE_THROWS_WITH(planBuckets({{3, 0, 0}}, 4, 4), Contains("parameter 0 has numel 3 and element size 0"));
}
