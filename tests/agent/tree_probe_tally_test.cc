#include "agent/tree_probe_tally.h"

#include <catch2/catch.hpp>
#include <string>

#include "common/error.h"

using dsrun::agent::TreeProbeTally;

namespace {

dsrun::wire::MeshProbeReply ownReply(std::vector<std::pair<std::string, std::string>> results) {
  dsrun::wire::MeshProbeReply reply;
  uint32_t micros = 100;
  for (const auto& [target, error] : results) {
    auto* r = reply.add_results();
    r->set_target(target);
    r->set_error(error);
    r->set_micros(micros += 100);
  }
  return reply;
}

dsrun::wire::TreeProbeReport childReport(const std::string& from, int broken, uint64_t pairs, uint32_t slowest) {
  dsrun::wire::TreeProbeReport report;
  for (int i = 0; i < broken; ++i) {
    auto* b = report.add_broken();
    b->set_from(from);
    b->set_target("t" + std::to_string(i) + ":29600");
    b->set_error("No route to host");
  }
  report.set_broken_count(static_cast<uint64_t>(broken));
  report.set_pairs(pairs);
  report.set_slowest_micros(slowest);
  return report;
}

}  // namespace

TEST_CASE("a tree probe tally is complete only once its own probe and every child answered", "[agent][tree][probe]") {
  TreeProbeTally tally("job", "n1", 2);
  CHECK_FALSE(tally.complete());
  tally.child(1, childReport("n3", 0, 3, 10));
  tally.own(ownReply({{"n2:29600", ""}}));
  CHECK_FALSE(tally.complete());
  tally.childSilent(0);  // lost: its NodeLost went up on its own
  REQUIRE(tally.complete());
  const auto report = tally.report();
  CHECK(report.job_id() == "job");
  CHECK(report.pairs() == 4);
  CHECK(report.broken_count() == 0);
  CHECK(report.slowest_micros() == 200);
}

TEST_CASE("a tree probe report lists broken pairs in pre-order: this node's, then each child's in child order",
          "[agent][tree][probe]") {
  TreeProbeTally tally("job", "n1", 2);
  // Children answer in reverse order; the report still follows the launch's order (= host order).
  tally.child(1, childReport("n3", 1, 2, 50));
  tally.child(0, childReport("n2", 2, 2, 900));
  tally.own(ownReply({{"n4:29600", "Connection refused"}, {"n2:29600", ""}}));
  const auto report = tally.report();
  REQUIRE(report.broken_size() == 4);
  CHECK(report.broken(0).from() == "n1");
  CHECK(report.broken(0).target() == "n4:29600");
  CHECK(report.broken(0).error() == "Connection refused");
  CHECK(report.broken(1).from() == "n2");
  CHECK(report.broken(2).from() == "n2");
  CHECK(report.broken(3).from() == "n3");
  CHECK(report.broken_count() == 4);
  CHECK(report.pairs() == 6);
  CHECK(report.slowest_micros() == 900);
}

TEST_CASE("a tree probe report lists at most kMaxBrokenListed pairs and counts all of them", "[agent][tree][probe]") {
  const size_t cap = TreeProbeTally::kMaxBrokenListed;
  TreeProbeTally tally("job", "n1", 1);
  auto big = childReport("n2", static_cast<int>(cap), 500, 1);
  big.set_broken_count(cap + 40);  // the child listed cap of cap + 40
  tally.child(0, big);
  tally.own(ownReply({{"n9:29600", "no answer within 2000 ms"}}));
  const auto report = tally.report();
  CHECK(static_cast<size_t>(report.broken_size()) == cap);
  CHECK(report.broken(0).from() == "n1");  // this node's own pair comes first and is kept
  CHECK(report.broken_count() == cap + 41);
}

TEST_CASE("a child that predates the tree probe is counted as only probed; a second answer is ignored",
          "[agent][tree][probe]") {
  TreeProbeTally tally("job", "n1", 2);
  tally.childSilent(0, 3);
  tally.childSilent(0, 7);
  tally.child(1, childReport("n5", 0, 2, 1));
  tally.child(1, childReport("n5", 5, 2, 1));
  tally.own(ownReply({}));
  const auto report = tally.report();
  CHECK(report.unprobed_nodes() == 3);
  CHECK(report.broken_count() == 0);
  CHECK(report.pairs() == 2);
}

TEST_CASE("a tree probe report asked for before every answer is in is a bug", "[agent][tree][probe]") {
  TreeProbeTally tally("job", "n1", 1);
  tally.own(ownReply({}));
  CHECK_THROWS_AS(tally.report(), dsrun::InternalError);
  CHECK_THROWS_AS(tally.child(1, childReport("x", 0, 0, 0)), dsrun::InternalError);
}
