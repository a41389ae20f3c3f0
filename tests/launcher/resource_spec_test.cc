#include "launcher/resource_spec.h"

#include <catch2/catch.hpp>

#include "common/error.h"

using Catch::Matchers::Contains;
using dsrun::launcher::applyResourceFilter;
using dsrun::launcher::HostSlots;
using dsrun::launcher::ResourcePool;

namespace {

const ResourcePool kOne = {{"worker-0", {0, 1, 2, 3}}};
const ResourcePool kTwo = {{"worker-0", {0, 1, 2, 3}}, {"worker-1", {0, 1, 2, 3}}};

std::string show(const ResourcePool& pool) {
  std::string out;
  for (const HostSlots& h : pool) {
    out += h.host + ":";
    for (size_t i = 0; i < h.slots.size(); ++i) out += (i ? "," : "") + std::to_string(h.slots[i]);
    out += " ";
  }
  return out;
}

ResourcePool filter(const ResourcePool& pool, const std::string& include, const std::string& exclude) {
  return applyResourceFilter(pool, include, exclude, "in h");
}

}  // namespace

TEST_CASE("applyResourceFilter matches DeepSpeed on one node", "[launcher][resource_spec]") {
  // DeepSpeed tests/unit/launcher/test_run.py::test_parser_local
  auto [include, exclude, expected] = GENERATE(table<std::string, std::string, std::string>({
      {"", "", "worker-0:0,1,2,3 "},
      {"", "worker-0:1", "worker-0:0,2,3 "},
      {"", "worker-0:1,2", "worker-0:0,3 "},
      {"worker-0:1", "", "worker-0:1 "},
      {"worker-0:1,1", "", "worker-0:1 "},
      {"worker-0:1@worker-0:0,1", "", "worker-0:0,1 "},
      {"worker-0", "", "worker-0:0,1,2,3 "},
      {"", "worker-0", ""},
      {"", "worker-0:0,1,2,3", ""},
      // slot lists come out sorted, as parse_node_config_list sorts them
      {"worker-0:3,1", "", "worker-0:1,3 "},
  }));
  CAPTURE(include, exclude);
  CHECK(show(filter(kOne, include, exclude)) == expected);
}

TEST_CASE("applyResourceFilter matches DeepSpeed on several nodes and keeps hostfile order",
          "[launcher][resource_spec]") {
  // DeepSpeed test_parser_multinode, plus ordering cases.
  auto [include, exclude, expected] = GENERATE(table<std::string, std::string, std::string>({
      {"", "", "worker-0:0,1,2,3 worker-1:0,1,2,3 "},
      {"worker-1:0,3", "", "worker-1:0,3 "},
      {"", "worker-1", "worker-0:0,1,2,3 "},
      {"", "worker-0:0,1@worker-1:3", "worker-0:2,3 worker-1:0,1,2 "},
      {"worker-1@worker-0:2", "", "worker-0:2 worker-1:0,1,2,3 "},
      // DeepSpeed's fixed semantics (PR #8239): a bare name means every slot of that host
      {"worker-0@worker-1:0,2", "", "worker-0:0,1,2,3 worker-1:0,2 "},
      // a host named twice is merged: the bare mention adds no slots to the explicit ones
      {"worker-1@worker-1:2", "", "worker-1:2 "},
      {"", "worker-1:1@worker-1:2", "worker-0:0,1,2,3 worker-1:0,3 "},
  }));
  CAPTURE(include, exclude);
  CHECK(show(filter(kTwo, include, exclude)) == expected);
}

TEST_CASE("applyResourceFilter keeps the pool's slot order when excluding", "[launcher][resource_spec]") {
  const ResourcePool pool = {{"a", {3, 1, 2}}};
  CHECK(show(filter(pool, "", "a:1")) == "a:3,2 ");
}

TEST_CASE("applyResourceFilter errors name the flag and spec and list the valid choices", "[launcher][resource_spec]") {
  // DeepSpeed test_parser_errors and test_parser_mutual_exclusive, with dsrun's messages.
  auto [include, exclude, expected] = GENERATE(table<std::string, std::string, std::string>({
      {"jeff", "", "--include 'jeff': host 'jeff' is not in h (hosts: worker-0, worker-1)"},
      {"", "jeff", "--exclude 'jeff': host 'jeff' is not in h (hosts: worker-0, worker-1)"},
      {"worker-1:4", "", "--include 'worker-1:4': host 'worker-1' has no slot 4 (slots: 0-3)"},
      {"", "worker-1:4", "--exclude 'worker-1:4': host 'worker-1' has no slot 4 (slots: 0-3)"},
      {"", "worker-1@worker-0:1@5", "--exclude 'worker-1@worker-0:1@5': host '5' is not in h"},
      {"A", "B", "--include and --exclude are mutually exclusive, got --include 'A' and --exclude 'B'"},
      {"worker-0:1:2", "", "--include 'worker-0:1:2': expected NAME[:SLOT[,SLOT...]] for each '@'-separated node, "
                           "got 'worker-0:1:2'"},
      {"worker-0:x", "", "--include 'worker-0:x': slot must be a non-negative integer, got 'x'"},
      {"worker-0:", "", "--include 'worker-0:': slot must be a non-negative integer, got ''"},
      {"worker-0:1,", "", "--include 'worker-0:1,': slot must be a non-negative integer, got ''"},
      {"worker-0:-1", "", "--include 'worker-0:-1': slot must be a non-negative integer, got '-1'"},
      {"worker-0@@worker-1", "", "got ''"},
      {":1", "", "--include ':1': expected NAME[:SLOT[,SLOT...]]"},
  }));
  CAPTURE(include, exclude);
  REQUIRE_THROWS_AS(filter(kTwo, include, exclude), dsrun::Error);
  REQUIRE_THROWS_WITH(filter(kTwo, include, exclude), Contains(expected));
}

TEST_CASE("mutually exclusive include and exclude is checked even on an empty pool", "[launcher][resource_spec]") {
  REQUIRE_THROWS_AS(filter({}, "A", "B"), dsrun::ConfigError);
}

TEST_CASE("parseNodeSpecs merges repeated hosts in first-appearance order", "[launcher][resource_spec]") {
  const auto specs = dsrun::launcher::parseNodeSpecs("b:2@a@b:1,2,0", "--include");
  REQUIRE(specs.size() == 2);
  CHECK(specs[0].host == "b");
  CHECK(specs[0].slots == std::vector<int>{0, 1, 2});
  CHECK(specs[1].host == "a");
  CHECK(specs[1].slots.empty());
}

TEST_CASE("formatRangeList writes DeepSpeed's numactl range notation", "[launcher][resource_spec]") {
  auto [ids, expected] = GENERATE(table<std::vector<int>, std::string>({
      {{0, 1, 2, 3}, "0-3"},
      {{0, 2, 3}, "0,2-3"},
      {{0, 1, 3}, "0-1,3"},
      {{5}, "5"},
      {{0, 2, 4}, "0,2,4"},
      {{1, 2, 4, 5, 6, 9}, "1-2,4-6,9"},
      {std::vector<int>{}, ""},
  }));
  CHECK(dsrun::launcher::formatRangeList(ids) == expected);
}
