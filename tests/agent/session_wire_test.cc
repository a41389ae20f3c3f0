// The Session's translation: each job event becomes the one wire message the launcher reads
// (launcher/backends/agent/agent_job.cc), and a LaunchRequest becomes the JobSpec the JobTable runs.
#include "agent/session_wire.h"

#include <catch2/catch.hpp>
#include <csignal>
#include <vector>

#include "proto/rank_env.h"

using namespace dsrun::agent;
using namespace dsrun::wire;

namespace {

const auto kWhen = std::chrono::system_clock::time_point(std::chrono::microseconds(1700000000123456));

}  // namespace

TEST_CASE("a rank's start, output and progress become RankStarted, OutputChunk and RankProgress",
          "[agent][session_wire]") {
  Envelope started = toEnvelope(event::Started{"job-a", 3, 4242});
  REQUIRE(started.has_rank_started());
  CHECK(started.rank_started().job_id() == "job-a");
  CHECK(started.rank_started().rank() == 3);
  CHECK(started.rank_started().pid() == 4242);

  const std::string bytes("line \xff\0 two\n", 12);
  Envelope out = toEnvelope(event::Output{"job-a", 1, OutputStream::Stderr, bytes});
  REQUIRE(out.has_output());
  CHECK(out.output().job_id() == "job-a");
  CHECK(out.output().rank() == 1);
  CHECK(out.output().stream() == STDERR);
  CHECK(out.output().data() == bytes);
  CHECK(toEnvelope(event::Output{"job-a", 1, OutputStream::Stdout, "x"}).output().stream() == STDOUT);

  Envelope progress = toEnvelope(event::Progress{"job-a", 2, 1234567890123});
  REQUIRE(progress.has_rank_progress());
  CHECK(progress.rank_progress().job_id() == "job-a");
  CHECK(progress.rank_progress().rank() == 2);
  CHECK(progress.rank_progress().step() == 1234567890123);
}

TEST_CASE("an exit becomes RankExited with the code or the signal, OOM evidence and the reap time",
          "[agent][session_wire]") {
  Envelope code = toEnvelope(event::Exited{"job-a", 0, 11, std::nullopt, 3, "", kWhen});
  REQUIRE(code.has_rank_exited());
  const RankExited& c = code.rank_exited();
  CHECK(c.job_id() == "job-a");
  CHECK(c.pid() == 11);
  CHECK(c.status_case() == RankExited::kExitCode);
  CHECK(c.exit_code() == 3);
  CHECK(c.exit_time_unix_us() == 1700000000123456);
  CHECK(c.given_up_state().empty());

  const RankExited zero = toEnvelope(event::Exited{"job-a", 0, 11, std::nullopt, 0, "", kWhen}).rank_exited();
  CHECK(zero.status_case() == RankExited::kExitCode);  // a clean exit is still reported as code 0

  const RankExited oom =
      toEnvelope(event::Exited{"job-a", 1, 12, SIGKILL, 0, "kernel log", kWhen}).rank_exited();
  CHECK(oom.status_case() == RankExited::kSignal);
  CHECK(oom.signal() == SIGKILL);
  CHECK(oom.oom_evidence() == "kernel log");
}

TEST_CASE("a rank given up becomes RankExited by SIGKILL with its process state", "[agent][session_wire]") {
  const RankExited e = toEnvelope(event::GivenUp{"job-d", 5, 77, "D (disk sleep)", kWhen}).rank_exited();
  CHECK(e.job_id() == "job-d");
  CHECK(e.rank() == 5);
  CHECK(e.pid() == 77);
  CHECK(e.status_case() == RankExited::kSignal);
  CHECK(e.signal() == SIGKILL);
  CHECK(e.given_up_state() == "D (disk sleep)");
  CHECK(e.oom_evidence().empty());
  CHECK(e.exit_time_unix_us() == 1700000000123456);
}

TEST_CASE("a launch failure becomes an Error that names the job and the ranks never started",
          "[agent][session_wire]") {
  Envelope e =
      toEnvelope(event::LaunchFailed{"job-x", "node-1 rank 2: spawn 'a.py': No such file or directory", {2, 3}});
  REQUIRE(e.has_error());
  CHECK(e.error().job_id() == "job-x");
  CHECK(e.error().message() == "node-1 rank 2: spawn 'a.py': No such file or directory");
  CHECK(std::vector<int>(e.error().unstarted_ranks().begin(), e.error().unstarted_ranks().end()) ==
        std::vector<int>{2, 3});
}

TEST_CASE("a LaunchRequest becomes a JobSpec, byte for byte, the last of a repeated variable winning",
          "[agent][session_wire]") {
  LaunchRequest request;
  request.set_job_id("job-l");
  request.set_kill_grace_s(2.5);
  request.set_progress_interval_s(0.25);
  request.mutable_log()->set_each_rank_log_dir("logs");
  request.mutable_log()->set_tag("20260101120000");
  RankLaunch* rank = request.add_ranks();
  rank->set_rank(9);
  rank->set_local_rank(1);
  rank->add_argv("python3");
  rank->add_argv(std::string("\xfe\x01", 2));
  dsrun::proto::addEnv(*rank, "A", "first");
  dsrun::proto::addEnv(*rank, "B", std::string("\xff", 1));
  dsrun::proto::addEnv(*rank, "A", "second");
  rank->set_cwd("/work/dir");
  rank->add_cores(2);
  rank->add_cores(3);
  request.add_ranks()->set_rank(10);

  const JobSpec job = toJobSpec(request);
  CHECK(job.id == "job-l");
  CHECK(job.killGraceS == 2.5);
  CHECK(job.progressIntervalS == 0.25);
  CHECK(job.eachRankLogDir == "logs");
  CHECK(job.logTag == "20260101120000");
  REQUIRE(job.ranks.size() == 2);
  const dsrun::RankSpec& r = job.ranks[0];
  CHECK(r.rank == 9);
  CHECK(r.localRank == 1);
  CHECK(r.command.argv == std::vector<std::string>{"python3", std::string("\xfe\x01", 2)});
  CHECK(r.command.env == std::map<std::string, std::string>{{"A", "second"}, {"B", std::string("\xff", 1)}});
  CHECK(r.command.cwd == "/work/dir");
  CHECK(r.cores == std::vector<int>{2, 3});
  CHECK(job.ranks[1].rank == 10);
}
