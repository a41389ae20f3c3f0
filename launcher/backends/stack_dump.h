#pragma once
// collectStacks: the stack traces of running ranks, taken on their hosts by their agents (hang
// detection, docs/elastic_training.md). For each host a short job runs there, one process per rank,
// printing that rank's stacks: `eu-stack -p PID` when installed, else gdb's `thread apply all bt`, else the
// kernel stacks of its threads (/proc/PID/task/*/stack). Blocking, bounded by `timeout`.

#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "supervision/stack_files.h"  // writeStackFiles, stackScript

namespace dsrun {

struct StackTarget {
  std::string host;  ///< as in the hostfile
  int rank = 0;      ///< global rank
  int pid = 0;       ///< on its host
};

/// Rank -> its stacks (or why they could not be taken). Never throws for an unreachable host: its ranks
/// get the connection error as their text.
std::map<int, std::string> collectStacks(boost::asio::ssl::context& ssl, int port, const std::string& clientName,
                                         const std::string& jobId, const std::vector<StackTarget>& targets,
                                         std::chrono::milliseconds timeout);


}  // namespace dsrun
