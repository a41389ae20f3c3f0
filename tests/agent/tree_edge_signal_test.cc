// agent/tree_edge_signal.h: the typed release/re-attach signals between current agents, and the Error texts
// of the agents from before them, read and written only on an edge to such an agent.
#include "agent/tree_edge_signal.h"

#include <catch2/catch.hpp>

using dsrun::wire::Envelope;
using namespace dsrun::agent;

namespace {

Envelope error(const std::string& job, const std::string& text) {
  Envelope e;
  e.mutable_error()->set_job_id(job);
  e.mutable_error()->set_message(text);
  return e;
}

}  // namespace

TEST_CASE("a current peer's release and re-attach are typed messages, read whatever the peer announced",
          "[agent][tree][edge]") {
  Envelope released;
  released.mutable_tree_released()->set_job_id("j");
  Envelope reattached;
  reattached.mutable_tree_reattached()->set_job_id("j");
  for (bool typed : {true, false}) {
    INFO("peer announced the typed messages: " << typed);
    CHECK(edgeSignalOf(released, typed) == EdgeSignal::Released);
    CHECK(edgeSignalOf(reattached, typed) == EdgeSignal::Reattached);
  }
  CHECK(releasedMessage("job-7", true, false).tree_released().job_id() == "job-7");
  CHECK_FALSE(releasedMessage("job-7", true, false).has_error());
  // Whether the job ends in the child's whole subtree (it releases its own children) or the child alone was given
  // up (its children wait for the parent's adoption) travels only in the typed message.
  CHECK(releaseEndsJob(releasedMessage("job-7", true, true)));
  CHECK_FALSE(releaseEndsJob(releasedMessage("job-7", true, false)));
  CHECK_FALSE(releaseEndsJob(releasedMessage("job-7", false, true)));
  CHECK(reattachedMessage("job-7", true).tree_reattached().job_id() == "job-7");
  CHECK_FALSE(reattachedMessage("job-7", true).has_error());
}

TEST_CASE("an older agent's Error texts are read as the signals only from a peer that did not announce the typed "
          "ones, and are what such a peer is sent",
          "[agent][tree][edge]") {
  // Exactly what agents before TreeReleased/TreeReattached send (agent/child_link.cc, agent/session_tree.cc).
  const Envelope oldReleased = error("", "released: job job-r ends here, nobody adopts it");
  const Envelope oldAdopted = error("", "adopted: job job-l re-attached to an ancestor");
  CHECK(edgeSignalOf(oldReleased, false) == EdgeSignal::Released);
  CHECK(edgeSignalOf(oldAdopted, false) == EdgeSignal::Reattached);
  // From a current agent, an Error is an error, whatever its words.
  CHECK(edgeSignalOf(oldReleased, true) == EdgeSignal::None);
  CHECK(edgeSignalOf(oldAdopted, true) == EdgeSignal::None);
  // A job-scoped Error is never an edge signal, nor is other text.
  CHECK(edgeSignalOf(error("job-r", "released: job job-r ends here"), false) == EdgeSignal::None);
  CHECK(edgeSignalOf(error("", "agent shutting down"), false) == EdgeSignal::None);
  CHECK(edgeSignalOf(error("", "the job was released: see above"), false) == EdgeSignal::None);
  Envelope beat;
  beat.mutable_heartbeat();
  CHECK(edgeSignalOf(beat, false) == EdgeSignal::None);
  // What an older peer is sent reads back as the signal at an older agent's check (the same prefix test).
  CHECK(releasedMessage("job-r", false, false).error().message() == oldReleased.error().message());
  CHECK(reattachedMessage("job-l", false).error().message() == oldAdopted.error().message());
  CHECK(releasedMessage("job-r", false, false).error().job_id().empty());
  CHECK(edgeSignalOf(releasedMessage("job-r", false, false), false) == EdgeSignal::Released);
  CHECK(edgeSignalOf(reattachedMessage("job-l", false), false) == EdgeSignal::Reattached);
}
