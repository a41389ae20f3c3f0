#pragma once
// A tree launch says once what every rank shares (a template RankLaunch) and per rank only what differs
// (RankDelta). rankDelta and applyRankDelta are inverses: applyRankDelta(t, rankDelta(t, r)) == r field by
// field, so the serialized RankLaunch an agent expands is byte-for-byte the one a star launch sends.

#include "proto/agent.pb.h"

namespace dsrun::proto {

/// What `rank` does differently from `rankTemplate`: rank and local_rank, argv/env values by position when the
/// lists line up (same length; env also same names in the same order), the whole list otherwise, cwd when it
/// differs, and cores always.
wire::RankDelta rankDelta(const wire::RankLaunch& rankTemplate, const wire::RankLaunch& rank);

/// rankDelta written into `out`, which must be clear: dsrun fills a reused, Clear()ed part for each node, so
/// that the 80,000 deltas of a 10,000-node launch reuse their strings and arrays instead of allocating anew.
void fillRankDelta(const wire::RankLaunch& rankTemplate, const wire::RankLaunch& rank, wire::RankDelta& out);

/// The RankLaunch `delta` describes on top of `rankTemplate`. Throws dsrun::Error naming the rank when the
/// delta does not fit the template (an index past the end, value and index lists of different lengths): such
/// a launch was made for another template, and nothing of it may be started.
wire::RankLaunch applyRankDelta(const wire::RankLaunch& rankTemplate, const wire::RankDelta& delta);

}  // namespace dsrun::proto
