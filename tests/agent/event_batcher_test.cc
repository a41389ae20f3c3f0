// EventBatcher: what is ready in one turn of the loop leaves as one frame, flattened, in order, and bounded.
#include "agent/event_batcher.h"

#include <catch2/catch.hpp>
#include <string>

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
