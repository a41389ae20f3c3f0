#pragma once
// collectStacks: the stack traces of running ranks, taken on their hosts by their agents (hang
// detection, docs/elastic_training.md). For each host a short job runs there, one process per rank,
// printing that rank's stacks: `eu-stack -p PID` when installed, else gdb's `thread apply all bt`, else the
// kernel stacks of its threads (/proc/PID/task/*/stack). Asynchronous, on the caller's io_context: the
// job's loop goes on (heartbeats, output, other failures) while the stacks are taken.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "supervision/stack_files.h"  // writeStackFiles, stackScript

namespace dsrun::launcher {

struct StackTarget {
  std::string host;  ///< as in the hostfile
  int rank = 0;      ///< global rank
  int pid = 0;       ///< on its host
};

/// Rank -> its stacks (or why they could not be taken).
using RankStacks = std::map<int, std::string>;

/// Starts taking the stacks of `targets` on `io` (the calling thread must be that loop's) and returns at
/// once. `done` runs once on `io`, within `timeout`, with what was collected; an unreachable host's ranks
/// get the connection error as their text, a rank with no answer in time a note saying so. `ssl` outlives
/// the collection.
void collectStacks(boost::asio::io_context& io, boost::asio::ssl::context& ssl, int port,
                   const std::string& clientName, const std::string& jobId, const std::vector<StackTarget>& targets,
                   std::chrono::milliseconds timeout, std::function<void(RankStacks)> done);

}  // namespace dsrun::launcher
