#include "agent/tree_probe_tally.h"

#include <algorithm>

#include "common/error.h"

namespace dsrun::agent {

TreeProbeTally::TreeProbeTally(std::string jobId, std::string host, size_t children)
    : jobId_(std::move(jobId)), host_(std::move(host)), children_(children) {}

void TreeProbeTally::own(const wire::MeshProbeReply& reply) { own_ = reply; }

void TreeProbeTally::child(size_t index, const wire::TreeProbeReport& report) {
  DSRUN_CHECK(index < children_.size(), "tree probe child ", index, " of ", children_.size());
  if (!children_[index]) children_[index] = report;
}

void TreeProbeTally::childSilent(size_t index, uint64_t unprobedNodes) {
  DSRUN_CHECK(index < children_.size(), "tree probe child ", index, " of ", children_.size());
  if (children_[index]) return;
  wire::TreeProbeReport none;
  none.set_unprobed_nodes(unprobedNodes);
  children_[index] = std::move(none);
}

bool TreeProbeTally::complete() const {
  return own_.has_value() &&
         std::all_of(children_.begin(), children_.end(), [](const auto& c) { return c.has_value(); });
}

wire::TreeProbeReport TreeProbeTally::report() const {
  DSRUN_CHECK(complete(), "tree probe report of job ", jobId_, " before every answer is in");
  wire::TreeProbeReport out;
  out.set_job_id(jobId_);
  auto list = [&out](wire::TreeProbeBroken broken) {
    out.set_broken_count(out.broken_count() + 1);
    if (static_cast<size_t>(out.broken_size()) < kMaxBrokenListed) *out.add_broken() = std::move(broken);
  };
  for (const wire::MeshProbeResult& r : own_->results()) {
    out.set_pairs(out.pairs() + 1);
    if (r.error().empty()) {
      out.set_slowest_micros(std::max(out.slowest_micros(), r.micros()));
      continue;
    }
    wire::TreeProbeBroken broken;
    broken.set_from(host_);
    broken.set_target(r.target());
    broken.set_error(r.error());
    list(std::move(broken));
  }
  for (const auto& c : children_) {
    for (const wire::TreeProbeBroken& b : c->broken()) list(b);
    // What a child counted but could not list stays counted.
    const uint64_t unlisted = c->broken_count() - std::min<uint64_t>(c->broken_count(), c->broken_size());
    out.set_broken_count(out.broken_count() + unlisted);
    out.set_pairs(out.pairs() + c->pairs());
    out.set_slowest_micros(std::max(out.slowest_micros(), c->slowest_micros()));
    out.set_unprobed_nodes(out.unprobed_nodes() + c->unprobed_nodes());
  }
  return out;
}

}  // namespace dsrun::agent
