#include "proto/rank_events.h"

#include "common/error.h"
#include "common/strings.h"

namespace dsrun::proto {
namespace {

enum class Kind { None, Started, Exited };

Kind kindOf(const wire::Envelope& e) {
  if (e.has_rank_started() || e.has_ranks_started()) return Kind::Started;
  if (e.has_ranks_exited() || (e.has_rank_exited() && cleanExit(e.rank_exited()))) return Kind::Exited;
  return Kind::None;
}

const std::string& jobOf(const wire::Envelope& e) {
  if (e.has_rank_started()) return e.rank_started().job_id();
  if (e.has_ranks_started()) return e.ranks_started().job_id();
  if (e.has_rank_exited()) return e.rank_exited().job_id();
  return e.ranks_exited().job_id();
}

/// Appends values to a list of differences, carrying the last absolute value.
struct DeltaList {
  int64_t last = 0;
  template <typename List>
  void add(List& list, int64_t value) {
    list.Add(value - last);
    last = value;
  }
};

/// One merged message being filled from a run of events.
struct Merger {
  wire::Envelope out;
  DeltaList rank, pid, time;

  void started(int32_t r, int32_t p) {
    wire::RanksStarted& m = *out.mutable_ranks_started();
    rank.add(*m.mutable_rank_deltas(), r);
    pid.add(*m.mutable_pid_deltas(), p);
  }
  void exited(int32_t r, int32_t p, int64_t whenUs) {
    wire::RanksExited& m = *out.mutable_ranks_exited();
    rank.add(*m.mutable_rank_deltas(), r);
    pid.add(*m.mutable_pid_deltas(), p);
    time.add(*m.mutable_exit_time_deltas_us(), whenUs);
  }
  void add(const wire::Envelope& e) {
    if (e.has_rank_started()) return started(e.rank_started().rank(), e.rank_started().pid());
    if (e.has_rank_exited()) {
      return exited(e.rank_exited().rank(), e.rank_exited().pid(), e.rank_exited().exit_time_unix_us());
    }
    if (e.has_ranks_started()) {
      for (const auto& s : ranksStarted(e.ranks_started())) started(s.rank(), s.pid());
      return;
    }
    for (const auto& x : ranksExited(e.ranks_exited())) exited(x.rank(), x.pid(), x.exit_time_unix_us());
  }
};

void checkLengths(const char* what, int ranks, int pids, int times) {
  if (ranks != pids || (times >= 0 && times != ranks)) {
    throw Error(strCat(what, ": ", ranks, " ranks, ", pids, " pids", times >= 0 ? strCat(", ", times, " times") : "",
                       " (a broken agent)"));
  }
}

}  // namespace

bool cleanExit(const wire::RankExited& exited) {
  return exited.status_case() == wire::RankExited::kExitCode && exited.exit_code() == 0 &&
         exited.oom_evidence().empty() && exited.given_up_state().empty();
}

void mergeRankEvents(std::vector<wire::Envelope>& events) {
  std::vector<wire::Envelope> out;
  out.reserve(events.size());
  for (size_t i = 0; i < events.size();) {
    const Kind kind = kindOf(events[i]);
    size_t end = i + 1;
    while (kind != Kind::None && end < events.size() && kindOf(events[end]) == kind &&
           jobOf(events[end]) == jobOf(events[i])) {
      ++end;
    }
    if (kind == Kind::None || (end == i + 1 && !events[i].has_ranks_started() && !events[i].has_ranks_exited())) {
      out.push_back(std::move(events[i]));  // not mergeable, or alone and already as small as it gets
      i = end;
      continue;
    }
    Merger m;
    if (kind == Kind::Started) m.out.mutable_ranks_started()->set_job_id(jobOf(events[i]));
    else m.out.mutable_ranks_exited()->set_job_id(jobOf(events[i]));
    for (size_t k = i; k < end; ++k) m.add(events[k]);
    out.push_back(std::move(m.out));
    i = end;
  }
  events = std::move(out);
}

void expandRankEvents(std::vector<wire::Envelope>& events) {
  std::vector<wire::Envelope> out;
  out.reserve(events.size());
  for (auto& e : events) {
    if (e.has_ranks_started()) {
      for (auto& s : ranksStarted(e.ranks_started())) *out.emplace_back().mutable_rank_started() = std::move(s);
    } else if (e.has_ranks_exited()) {
      for (auto& x : ranksExited(e.ranks_exited())) *out.emplace_back().mutable_rank_exited() = std::move(x);
    } else {
      out.push_back(std::move(e));
    }
  }
  events = std::move(out);
}

std::vector<wire::RankStarted> ranksStarted(const wire::RanksStarted& merged) {
  checkLengths("ranks started", merged.rank_deltas_size(), merged.pid_deltas_size(), -1);
  std::vector<wire::RankStarted> out(static_cast<size_t>(merged.rank_deltas_size()));
  int64_t rank = 0, pid = 0;
  for (int i = 0; i < merged.rank_deltas_size(); ++i) {
    rank += merged.rank_deltas(i);
    pid += merged.pid_deltas(i);
    wire::RankStarted& s = out[static_cast<size_t>(i)];
    s.set_job_id(merged.job_id());
    s.set_rank(static_cast<int32_t>(rank));
    s.set_pid(static_cast<int32_t>(pid));
  }
  return out;
}

std::vector<wire::RankExited> ranksExited(const wire::RanksExited& merged) {
  checkLengths("ranks exited", merged.rank_deltas_size(), merged.pid_deltas_size(),
               merged.exit_time_deltas_us_size());
  std::vector<wire::RankExited> out(static_cast<size_t>(merged.rank_deltas_size()));
  int64_t rank = 0, pid = 0, when = 0;
  for (int i = 0; i < merged.rank_deltas_size(); ++i) {
    rank += merged.rank_deltas(i);
    pid += merged.pid_deltas(i);
    when += merged.exit_time_deltas_us(i);
    wire::RankExited& x = out[static_cast<size_t>(i)];
    x.set_job_id(merged.job_id());
    x.set_rank(static_cast<int32_t>(rank));
    x.set_pid(static_cast<int32_t>(pid));
    x.set_exit_code(0);
    x.set_exit_time_unix_us(when);
  }
  return out;
}

namespace {

void appendEndedRanks(const wire::Envelope& event, std::vector<int>& out) {
  if (event.has_rank_exited()) out.push_back(event.rank_exited().rank());
  if (event.has_ranks_exited()) {
    // From the rank deltas alone: a message whose other lists are broken still says which ranks ended.
    int64_t rank = 0;
    for (int64_t delta : event.ranks_exited().rank_deltas()) {
      rank += delta;
      out.push_back(static_cast<int>(rank));
    }
  }
  if (event.has_error()) out.insert(out.end(), event.error().unstarted_ranks().begin(), event.error().unstarted_ranks().end());
  if (event.has_event_batch()) {
    for (const auto& inner : event.event_batch().events()) appendEndedRanks(inner, out);
  }
}

}  // namespace

std::vector<int> endedRanks(const wire::Envelope& event) {
  std::vector<int> out;
  appendEndedRanks(event, out);
  return out;
}

}  // namespace dsrun::proto
