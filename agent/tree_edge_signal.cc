#include "agent/tree_edge_signal.h"

#include "common/strings.h"

namespace dsrun::agent {
namespace {

// The exact prefixes agents before TreeReleased/TreeReattached send and look for (connection-level Errors).
constexpr const char* kReleasedPrefix = "released:";
constexpr const char* kAdoptedPrefix = "adopted:";

}  // namespace

EdgeSignal edgeSignalOf(const wire::Envelope& envelope, bool peerTyped) {
  if (envelope.has_tree_released()) return EdgeSignal::Released;
  if (envelope.has_tree_reattached()) return EdgeSignal::Reattached;
  // An older agent's signal: a connection-level Error (no job id) whose text starts with the word.
  if (peerTyped || !envelope.has_error() || !envelope.error().job_id().empty()) return EdgeSignal::None;
  if (startsWith(envelope.error().message(), kReleasedPrefix)) return EdgeSignal::Released;
  if (startsWith(envelope.error().message(), kAdoptedPrefix)) return EdgeSignal::Reattached;
  return EdgeSignal::None;
}

wire::Envelope releasedMessage(const std::string& job, bool childTyped, bool jobEnds) {
  wire::Envelope e;
  if (childTyped) {
    e.mutable_tree_released()->set_job_id(job);
    e.mutable_tree_released()->set_job_ends(jobEnds);
  } else {
    e.mutable_error()->set_message(strCat(kReleasedPrefix, " job ", job, " ends here, nobody adopts it"));
  }
  return e;
}

bool releaseEndsJob(const wire::Envelope& envelope) {
  return envelope.has_tree_released() && envelope.tree_released().job_ends();
}

wire::Envelope reattachedMessage(const std::string& job, bool parentTyped) {
  wire::Envelope e;
  if (parentTyped) {
    e.mutable_tree_reattached()->set_job_id(job);
  } else {
    e.mutable_error()->set_message(strCat(kAdoptedPrefix, " job ", job, " re-attached to an ancestor"));
  }
  return e;
}

}  // namespace dsrun::agent
