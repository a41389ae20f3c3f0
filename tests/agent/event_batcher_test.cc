// EventBatcher: what is ready in one turn of the loop leaves as one frame, flattened, in order, and bounded.
#include "agent/event_batcher.h"
#include "proto/rank_events.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using dsrun::agent::EventBatcher;
using dsrun::agent::outputBytes;
using dsrun::wire::Envelope;

namespace {

Envelope output(int rank, size_t bytes) {
  Envelope e;
  e.mutable_output()->set_job_id("j");
  e.mutable_output()->set_rank(rank);
  e.mutable_output()->set_data(std::string(bytes, 'x'));
  return e;
}

}  // namespace

TEST_CASE("a lone event leaves as itself, several as one batch in the order they came", "[agent][tree][batch]") {
  EventBatcher batcher;
  CHECK(batcher.add(output(0, 3)));  // the first asks for a flush
  auto one = batcher.take();
  REQUIRE(one.size() == 1);
  CHECK(one[0].has_output());
  CHECK(batcher.empty());

  CHECK(batcher.add(output(1, 3)));
  CHECK_FALSE(batcher.add(output(2, 4)));  // already scheduled
  Envelope relayed;  // a child's batch is opened: batches never nest
  *relayed.mutable_event_batch()->add_events() = output(3, 5);
  *relayed.mutable_event_batch()->add_events() = output(4, 6);
  CHECK_FALSE(batcher.add(relayed));
  auto batches = batcher.take();
  REQUIRE(batches.size() == 1);
  REQUIRE(batches[0].event_batch().events_size() == 4);
  for (int i = 0; i < 4; ++i) CHECK(batches[0].event_batch().events(i).output().rank() == i + 1);
  CHECK(outputBytes(batches[0]) == 3 + 4 + 5 + 6);
}

TEST_CASE("a batch closes at kMaxBatchBytes, so no frame nears the frame limit", "[agent][tree][batch]") {
  EventBatcher batcher;
  const size_t chunk = 64 * 1024;
  const size_t events = 3 * EventBatcher::kMaxBatchBytes / chunk;  // three batches' worth
  for (size_t i = 0; i < events; ++i) batcher.add(output(static_cast<int>(i), chunk));
  const auto batches = batcher.take();
  CHECK(batches.size() >= 3);
  size_t total = 0;
  int next = 0;
  for (const auto& b : batches) {
    CHECK(b.ByteSizeLong() <= EventBatcher::kMaxBatchBytes + chunk);
    for (const auto& e : b.event_batch().events()) CHECK(e.output().rank() == next++);
    total += static_cast<size_t>(b.event_batch().events_size());
  }
  CHECK(total == events);
}

namespace {

Envelope started(const std::string& job, int rank, int pid) {
  Envelope e;
  e.mutable_rank_started()->set_job_id(job);
  e.mutable_rank_started()->set_rank(rank);
  e.mutable_rank_started()->set_pid(pid);
  return e;
}

Envelope exited(const std::string& job, int rank, int pid, int code, int64_t whenUs) {
  Envelope e;
  e.mutable_rank_exited()->set_job_id(job);
  e.mutable_rank_exited()->set_rank(rank);
  e.mutable_rank_exited()->set_pid(pid);
  e.mutable_rank_exited()->set_exit_code(code);
  e.mutable_rank_exited()->set_exit_time_unix_us(whenUs);
  return e;
}

/// Every event of `taken` (batches opened, merged ones expanded), serialized: what a reader sees.
std::vector<std::string> seen(std::vector<Envelope> taken) {
  std::vector<Envelope> flat;
  for (auto& e : taken) {
    if (!e.has_event_batch()) flat.push_back(std::move(e));
    else for (const auto& inner : e.event_batch().events()) flat.push_back(inner);
  }
  dsrun::proto::expandRankEvents(flat);
  std::vector<std::string> out;
  for (const auto& e : flat) out.push_back(e.SerializeAsString());
  return out;
}

}  // namespace

TEST_CASE("runs of starts and clean exits leave merged for a parent that asked, in place, failures alone",
          "[agent][tree][batch][merged]") {
  // Out of order on purpose (ranks and pids go down as well as up): the differences are signed.
  std::vector<Envelope> events = {started("j", 8, 4100), started("j", 9, 4101), started("j", 3, 4090),
                                  started("k", 0, 500),  output(8, 10),         exited("j", 9, 4101, 0, 2000),
                                  exited("j", 8, 4100, 0, 1990), exited("j", 3, 4090, 1, 2010),
                                  exited("j", 2, 4089, 0, 2020)};
  EventBatcher batcher;
  for (const auto& e : events) batcher.add(e);
  auto taken = batcher.take(true);
  REQUIRE(taken.size() == 1);
  const auto& batch = taken[0].event_batch();
  // [j: 3 starts] [k: 1 start, alone: as it was] [output] [j: 2 clean exits] [the failure] [j: 1 clean exit]
  REQUIRE(batch.events_size() == 6);
  CHECK(batch.events(0).ranks_started().rank_deltas_size() == 3);
  CHECK(batch.events(1).has_rank_started());
  CHECK(batch.events(2).has_output());
  CHECK(batch.events(3).ranks_exited().rank_deltas_size() == 2);
  CHECK(batch.events(4).rank_exited().exit_code() == 1);  // a failure travels as it was, at once
  CHECK(batch.events(5).has_rank_exited());
  // A reader sees exactly the events that went in, in the same order.
  std::vector<std::string> in;
  for (const auto& e : events) in.push_back(e.SerializeAsString());
  CHECK(seen(taken) == in);
}

TEST_CASE("a node's 8 starts merged cost a few bytes a rank, not a RankStarted with the job id each",
          "[agent][tree][batch][merged]") {
  const std::string job = "dsrun-3f2c9a4e-51b7-4c1e-9d0a-6b8e2f1c7a55";
  std::vector<Envelope> events;
  size_t apart = 0;
  for (int r = 0; r < 8; ++r) {
    events.push_back(started(job, 80000 - 8 + r, 412345 + r));
    apart += events.back().ByteSizeLong();
  }
  dsrun::proto::mergeRankEvents(events);
  REQUIRE(events.size() == 1);
  CHECK(events[0].ByteSizeLong() < apart / 4);
}

TEST_CASE("merged events from below are merged further up, and expanded for a parent that did not ask",
          "[agent][tree][batch][merged]") {
  EventBatcher child;
  for (int r = 0; r < 8; ++r) child.add(started("j", r, 1000 + r));
  const auto fromChild = child.take(true);
  REQUIRE(fromChild.size() == 1);
  REQUIRE(fromChild[0].has_ranks_started());

  EventBatcher parent;  // the parent's own 8 ranks, then its child's merged 8
  for (int r = 8; r < 16; ++r) parent.add(started("j", r, 2000 + r));
  parent.add(fromChild[0]);
  const auto up = parent.take(true);
  REQUIRE(up.size() == 1);
  REQUIRE(up[0].ranks_started().rank_deltas_size() == 16);
  const auto ranks = dsrun::proto::ranksStarted(up[0].ranks_started());
  CHECK(ranks[0].rank() == 8);
  CHECK(ranks[15].rank() == 7);
  CHECK(ranks[15].pid() == 1007);
  CHECK(ranks[15].job_id() == "j");

  EventBatcher old;  // a parent whose own parent is an older agent or dsrun: one RankStarted per rank again
  old.add(up[0]);
  const auto expanded = old.take(false);
  REQUIRE(expanded.size() == 1);
  REQUIRE(expanded[0].event_batch().events_size() == 16);
  for (const auto& e : expanded[0].event_batch().events()) CHECK(e.has_rank_started());
}

TEST_CASE("a merged message whose lists differ in length is refused", "[agent][tree][batch][merged]") {
  dsrun::wire::RanksExited broken;
  broken.add_rank_deltas(1);
  broken.add_pid_deltas(1);  // no exit time
  CHECK_THROWS_WITH(dsrun::proto::ranksExited(broken), Catch::Matchers::Contains("1 ranks, 1 pids, 0 times"));
  Envelope e;
  *e.mutable_ranks_exited() = broken;
  CHECK(dsrun::proto::endedRanks(e) == std::vector<int>{1});
}
