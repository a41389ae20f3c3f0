#include "agent/event_batcher.h"

#include "proto/rank_events.h"

namespace dsrun::agent {

bool EventBatcher::add(const wire::Envelope& event) {
  const bool first = pending_.empty();
  if (event.has_event_batch()) {
    for (const auto& inner : event.event_batch().events()) pending_.push_back(inner);
  } else {
    pending_.push_back(event);
  }
  return first && !pending_.empty();
}

std::vector<wire::Envelope> EventBatcher::take(bool merged) {
  if (merged) proto::mergeRankEvents(pending_);
  else proto::expandRankEvents(pending_);
  std::vector<wire::Envelope> out;
  if (pending_.size() == 1) {
    out.push_back(std::move(pending_.front()));
    pending_.clear();
    return out;
  }
  size_t bytes = 0;
  for (auto& event : pending_) {
    const size_t size = event.ByteSizeLong();
    if (out.empty() || bytes + size > kMaxBatchBytes) {
      out.emplace_back();
      out.back().mutable_event_batch();
      bytes = 0;
    }
    bytes += size;
    *out.back().mutable_event_batch()->add_events() = std::move(event);
  }
  pending_.clear();
  return out;
}

uint64_t outputBytes(const wire::Envelope& envelope) {
  if (envelope.has_output()) return envelope.output().data().size();
  uint64_t bytes = 0;
  if (envelope.has_event_batch()) {
    for (const auto& event : envelope.event_batch().events()) {
      if (event.has_output()) bytes += event.output().data().size();
    }
  }
  return bytes;
}

}  // namespace dsrun::agent
