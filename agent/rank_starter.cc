#include "agent/rank_starter.h"

#include "common/env_contract.h"
#include "supervision/rank_log.h"

namespace dsrun::agent {

RankStarter::RankStarter(boost::asio::io_context& io, Spawner& spawner, Options options)
    : io_(io), spawner_(spawner), options_(std::move(options)) {}

StartedRank RankStarter::start(const JobSpec& job, const RankSpec& rank, const std::string& progressFile,
                               OutputSink output) {
  SpawnOptions so;
  so.cores = rank.cores;
  UniqueFd logFile;
  if (!job.eachRankLogDir.empty()) {
    const std::string dir = eachRankLogDir(job);
    prepareRankLogDir(dir);
    logFile = openRankLog(rankLogPath(dir, job.logTag, rank.rank), rank.rank);
    so.output = OutputMode::File;
    so.outputFd = logFile.get();
  }
  Command command{rank.command.argv, options_.baseEnv, rank.command.cwd};
  for (const auto& [name, value] : rank.command.env) command.env[name] = value;
  if (!progressFile.empty()) command.env[kEnvProgressFile] = progressFile;
  Subprocess child = spawner_.spawn(command, so);
  StartedRank started;
  started.pid = child.pid;
  if (so.output == OutputMode::File) return started;
  UniqueFd* fds[2] = {&child.stdoutFd, &child.stderrFd};
  for (int s = 0; s < 2; ++s) {
    if (!fds[s]->valid()) continue;  // a spawner that made no pipe (FakeSpawner): nothing to read
    const OutputStream stream = s == 0 ? OutputStream::Stdout : OutputStream::Stderr;
    started.pumps[s] = LogPump::create(
        io_, std::move(*fds[s]), options_.maxChunkBytes, output.gate,
        [onChunk = output.onChunk, stream](std::string_view data) { onChunk(stream, data); }, output.onStreamDone);
  }
  for (auto& pump : started.pumps) {
    if (pump) pump->start();
  }
  return started;
}

std::string RankStarter::eachRankLogDir(const JobSpec& job) const {
  const std::string& dir = job.eachRankLogDir;
  if (dir[0] != '/' && !options_.logDir.empty()) return options_.logDir + "/" + dir;
  return dir;
}

}  // namespace dsrun::agent
