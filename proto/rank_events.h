#pragma once
// Merged rank events (RanksStarted, RanksExited in proto/agent.proto): a tree agent passes its subtree's
// starts and clean exits up as a few packed lists instead of one message per rank, to a client that asked
// (Hello.merged_rank_events), and expands them again for a client that did not. Pure.

#include <vector>

#include "proto/agent.pb.h"

namespace dsrun::proto {

/// A clean exit: code 0, no OOM evidence, not given up. Only these are merged; a failure travels alone.
bool cleanExit(const wire::RankExited& exited);

/// Merges, in place, each run of consecutive events of one job that are starts (RankStarted or RanksStarted)
/// or clean exits (RankExited or RanksExited) into one RanksStarted or RanksExited at the run's place. Other
/// events (output, failures, NodeLost, ...) end a run and keep their place, so nothing is reordered: a rank's
/// output still comes before its exit. A lone RankStarted or RankExited stays as it is.
void mergeRankEvents(std::vector<wire::Envelope>& events);

/// Expands, in place, every RanksStarted and RanksExited into a RankStarted or RankExited per rank, in order.
void expandRankEvents(std::vector<wire::Envelope>& events);

/// The ranks of a merged message, one RankStarted or RankExited each (job id set), in order. Throws
/// dsrun::Error when its lists differ in length (a broken sender).
std::vector<wire::RankStarted> ranksStarted(const wire::RanksStarted& merged);
std::vector<wire::RankExited> ranksExited(const wire::RanksExited& merged);

/// The ranks an event reports as ended: a RankExited's rank, a RanksExited's ranks, a job Error's unstarted
/// ranks (an EventBatch: its events', in order). A parent keeps them as a set: an adoption below re-sends ends.
std::vector<int> endedRanks(const wire::Envelope& event);

}  // namespace dsrun::proto
