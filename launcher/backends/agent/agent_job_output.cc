// AgentJob's output half (agent_job.h): the ranks' output chunks framed into lines with their prefix, written
// by the OutputWriter thread, their stderr lines kept by the driver for the root-cause block, and the output
// credit returned to each connection once the writer has written what it sent.

#include "launcher/backends/agent/agent_job.h"

#include "common/strings.h"

namespace dsrun::launcher {

void AgentJob::onOutput(size_t nodeIndex, const wire::OutputChunk& chunk) {
  auto it = output_.find(chunk.rank());
  const size_t credit = chunk.data().size();
  if (it == output_.end()) {
    onWritten(nodeIndex, credit);
    return;
  }
  RankOutput& r = it->second;
  std::string text;
  const bool isStderr = chunk.stream() == wire::STDERR;
  (isStderr ? r.err : r.out).feed(chunk.data(), [&](std::string_view line) {
    text.append(r.prefix).append(line).push_back('\n');
    if (isStderr) job_->onRankStderr(chunk.rank(), line);
  });
  // The credit goes back once the writer has written these lines (a partial line is held by the
  // bounded LineBuffer and credited now, with the lines before it).
  writer_.write(isStderr ? OutputWriter::Stream::Err : OutputWriter::Stream::Out, std::move(text), nodeIndex, credit);
}

void AgentJob::onWritten(size_t nodeIndex, size_t bytes) {
  if (nodeIndex < nodes_.size()) nodes_[nodeIndex]->channel->written(bytes, settings_.outputWindowBytes);
}

void AgentJob::notice(const std::string& line) { writer_.write(OutputWriter::Stream::Err, line + "\n"); }

void AgentJob::flushOutput(int rank) {
  auto it = output_.find(rank);
  if (it == output_.end()) return;
  RankOutput& r = it->second;
  std::string out, err;
  r.out.finish([&](std::string_view line) { out.append(r.prefix).append(line).push_back('\n'); });
  r.err.finish([&](std::string_view line) {
    err.append(r.prefix).append(line).push_back('\n');
    job_->onRankStderr(rank, line);
  });
  if (!out.empty()) writer_.write(OutputWriter::Stream::Out, std::move(out));
  if (!err.empty()) writer_.write(OutputWriter::Stream::Err, std::move(err));
}

}  // namespace dsrun::launcher
