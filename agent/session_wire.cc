#include "agent/session_wire.h"

#include <csignal>
#include <type_traits>
#include <utility>

#include "agent/request_handler.h"

namespace dsrun::agent {
namespace {

int64_t unixMicros(std::chrono::system_clock::time_point when) {
  return std::chrono::duration_cast<std::chrono::microseconds>(when.time_since_epoch()).count();
}

wire::Envelope wire(event::Started&& e) {
  wire::Envelope out;
  auto* started = out.mutable_rank_started();
  started->set_job_id(std::move(e.jobId));
  started->set_rank(e.rank);
  started->set_pid(e.pid);
  return out;
}

wire::Envelope wire(event::Output&& e) {
  wire::Envelope out;
  auto* chunk = out.mutable_output();
  chunk->set_job_id(std::move(e.jobId));
  chunk->set_rank(e.rank);
  chunk->set_stream(e.stream == OutputStream::Stdout ? wire::STDOUT : wire::STDERR);
  chunk->set_data(std::move(e.data));
  return out;
}

wire::Envelope wire(event::Exited&& e) {
  wire::Envelope out;
  auto* exited = out.mutable_rank_exited();
  exited->set_job_id(std::move(e.jobId));
  exited->set_rank(e.rank);
  exited->set_pid(e.pid);
  exited->set_exit_time_unix_us(unixMicros(e.exitTime));
  if (e.signal) {
    exited->set_signal(*e.signal);
    if (!e.oomEvidence.empty()) exited->set_oom_evidence(std::move(e.oomEvidence));
  } else {
    exited->set_exit_code(e.exitCode);
  }
  return out;
}

wire::Envelope wire(event::GivenUp&& e) {
  wire::Envelope out;
  auto* exited = out.mutable_rank_exited();
  exited->set_job_id(std::move(e.jobId));
  exited->set_rank(e.rank);
  exited->set_pid(e.pid);
  exited->set_exit_time_unix_us(unixMicros(e.exitTime));
  // The launcher counts it as killed: SIGKILL was sent, and the job must end.
  exited->set_signal(SIGKILL);
  exited->set_given_up_state(std::move(e.state));
  return out;
}

wire::Envelope wire(event::Progress&& e) {
  wire::Envelope out;
  auto* progress = out.mutable_rank_progress();
  progress->set_job_id(std::move(e.jobId));
  progress->set_rank(e.rank);
  progress->set_step(e.step);
  return out;
}

wire::Envelope wire(event::LaunchFailed&& e) {
  wire::Envelope out = makeError(e.jobId, e.message);
  for (int rank : e.unstartedRanks) out.mutable_error()->add_unstarted_ranks(rank);
  return out;
}

}  // namespace

JobSpec toJobSpec(const wire::LaunchRequest& request) {
  JobSpec job;
  job.id = request.job_id();
  job.eachRankLogDir = request.log().each_rank_log_dir();
  job.logTag = request.log().tag();
  job.killGraceS = request.kill_grace_s();
  job.progressIntervalS = request.progress_interval_s();
  job.ranks.reserve(static_cast<size_t>(request.ranks_size()));
  for (const wire::RankLaunch& launch : request.ranks()) {
    RankSpec rank;
    rank.rank = launch.rank();
    rank.localRank = launch.local_rank();
    rank.command.argv.assign(launch.argv().begin(), launch.argv().end());
    for (const wire::EnvVar& var : launch.env()) rank.command.env[var.name()] = var.value();
    rank.command.cwd = launch.cwd();
    rank.cores.assign(launch.cores().begin(), launch.cores().end());
    job.ranks.push_back(std::move(rank));
  }
  return job;
}

wire::Envelope toEnvelope(JobEvent event) {
  return std::visit([](auto&& e) { return wire(std::move(e)); }, std::move(event));
}

}  // namespace dsrun::agent
