#include "agent/process_table.h"

#include <sys/wait.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <csignal>
#include <optional>

#include "agent/log_pump.h"
#include "agent/progress_watch.h"
#include "supervision/process_state.h"
#include "agent/request_handler.h"
#include "common/env_contract.h"
#include "common/error.h"
#include "common/logging.h"
#include "supervision/rank_log.h"
#include "tls/redact.h"

namespace dsrun::agent {

struct ProcessTable::Rank {
  int rank = 0;
  size_t slot = 0;  ///< in the job's JobController
  pid_t pid = -1;
  bool reaped = false;
  int waitStatus = 0;
  int openPumps = 0;
  bool reported = false;
  std::shared_ptr<LogPump> pumps[2];
  std::unique_ptr<boost::asio::steady_timer> drainTimer;
  uint64_t drainedBytes = 0;  ///< bytes read by both pumps when the drain timer was armed
  std::chrono::system_clock::time_point exitTime;  ///< when it was reaped
  std::string givenUpState;  ///< non-empty: alive killWaitS after SIGKILL (state D), given up in this state
};

struct ProcessTable::Job {
  std::string id;
  uint64_t owner = 0;
  std::chrono::milliseconds grace{0};
  std::unique_ptr<JobController> controller;  ///< decides when to stop and to kill
  std::unique_ptr<boost::asio::steady_timer> killTimer;
  std::map<int, Rank> ranks;
  std::unique_ptr<ProgressWatch> progress;  ///< LaunchRequest.progress_interval_s > 0
};

namespace {

/// After SIGKILL, how long a rank may take to die before it is given up (state D): as runLocalJob's.
constexpr double kKillWaitS = 10;

bool stopsJob(int signal) { return signal == SIGTERM || signal == SIGINT || signal == SIGHUP || signal == SIGKILL; }

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// The agent's part of the job's policy: it stops and kills when told; a rank's failure is the
/// launcher's to judge, and a signal while stopping is passed on as is.
JobControllerOptions controllerOptions(std::chrono::milliseconds grace) {
  JobControllerOptions options;
  options.killGraceS = std::chrono::duration<double>(grace).count();
  options.killWaitS = kKillWaitS;
  options.rankFailureStops = false;
  options.whileStopping = SignalWhileStopping::Forward;
  return options;
}

}  // namespace

ProcessTable::ProcessTable(boost::asio::io_context& io, Spawner& spawner, JobEvents& events, Options options)
    : io_(io), spawner_(spawner), events_(events), options_(std::move(options)), sigchld_(io, SIGCHLD) {
  armReaper();
}

ProcessTable::~ProcessTable() {
  // Last resort (normal shutdown goes through stopAll): never leave a rank behind.
  for (const auto& [pid, jobId] : pidToJob_) spawner_.signalGroup(pid, SIGKILL);
}

void ProcessTable::launch(uint64_t owner, const LaunchRequest& request) {
  DSRUN_CHECK_THREAD(thread_);
  DSRUN_CHECK(jobs_.count(request.job_id()) == 0, "job '", request.job_id(), "' launched twice");
  auto job = std::make_unique<Job>();
  job->id = request.job_id();
  job->owner = owner;
  job->grace = request.kill_grace_s() > 0
                   ? std::chrono::milliseconds(static_cast<long long>(request.kill_grace_s() * 1000))
                   : options_.killGrace;
  job->killTimer = std::make_unique<boost::asio::steady_timer>(io_);
  job->controller = std::make_unique<JobController>(static_cast<size_t>(request.ranks_size()), controllerOptions(job->grace));
  if (request.progress_interval_s() > 0) {
    const auto interval = std::chrono::milliseconds(std::max(10LL, static_cast<long long>(request.progress_interval_s() * 1000)));
    job->progress = std::make_unique<ProgressWatch>(io_, job->id, interval, [this, owner, id = job->id](int rank, int64_t step) {
      Envelope e;
      e.mutable_rank_progress()->set_job_id(id);
      e.mutable_rank_progress()->set_rank(rank);
      e.mutable_rank_progress()->set_step(step);
      events_.deliver(owner, std::move(e));
    });
  }
  Job& ref = *job;
  jobs_[request.job_id()] = std::move(job);
  DSRUN_LOG(INFO) << "job " << ref.id << ": launching " << request.ranks_size() << " rank(s)";
  for (size_t slot = 0; slot < static_cast<size_t>(request.ranks_size()); ++slot) {
    const RankLaunch& spec = request.ranks(static_cast<int>(slot));
    try {
      spawnRank(ref, slot, spec, request);
    } catch (const dsrun::Error& e) {
      const std::string why = strCat(options_.hostName, " rank ", spec.rank(), ": ", e.what());
      DSRUN_LOG(WARN) << "job " << ref.id << ": " << why;
      events_.deliver(owner, makeError(ref.id, why));
      const double now = nowSeconds();
      carryOut(ref, ref.controller->onSpawnFailed(TimedFailure{secondsToMicros(now), 1, why, options_.hostName}, now),
               "a rank could not be started");
      maybeFinish(ref.id);
      return;
    }
    const Rank& rank = ref.ranks[spec.rank()];
    DSRUN_LOG(DEBUG) << "job " << ref.id << " rank " << spec.rank() << ": pid " << rank.pid << " argv "
                     << join(tls::redactArgv({spec.argv().begin(), spec.argv().end()}), " ");
    Envelope started;
    started.mutable_rank_started()->set_job_id(ref.id);
    started.mutable_rank_started()->set_rank(spec.rank());
    started.mutable_rank_started()->set_pid(rank.pid);
    events_.deliver(owner, std::move(started));
  }
}

void ProcessTable::spawnRank(Job& job, size_t slot, const RankLaunch& spec, const LaunchRequest& request) {
  SpawnOptions so;
  so.cores.assign(spec.cores().begin(), spec.cores().end());
  UniqueFd logFile;
  if (!request.log().each_rank_log_dir().empty()) {
    const std::string dir = eachRankLogDir(request);
    prepareRankLogDir(dir);
    logFile = openRankLog(rankLogPath(dir, request.log().tag(), spec.rank()), spec.rank());
    so.output = OutputMode::File;
    so.outputFd = logFile.get();
  }
  // Like a login shell on the node for pdsh/ssh: the agent's environment, then the launcher's variables.
  Command command{{spec.argv().begin(), spec.argv().end()}, options_.baseEnv, spec.cwd()};
  for (const auto& var : spec.env()) command.env[var.name()] = var.value();
  if (job.progress) command.env[kEnvProgressFile] = job.progress->fileFor(spec.rank());
  Subprocess child = spawner_.spawn(command, so);
  Rank& rank = job.ranks[spec.rank()];
  rank.rank = spec.rank();
  rank.pid = child.pid;
  rank.slot = slot;
  pidToJob_[child.pid] = job.id;
  job.controller->rankStarted(slot);
  if (so.output == OutputMode::File) return;
  const std::string jobId = job.id;
  const uint64_t owner = job.owner;
  const int rankId = spec.rank();
  UniqueFd* fds[2] = {&child.stdoutFd, &child.stderrFd};
  for (int s = 0; s < 2; ++s) {
    const auto stream = s == 0 ? STDOUT : STDERR;
    FlowGate gate{[this, owner] { return events_.congested(owner); },
                  [this, owner](std::function<void()> resume) { events_.whenDrained(owner, std::move(resume)); }};
    auto onChunk = [this, owner, jobId, rankId, stream](std::string_view data) {
      Envelope e;
      auto* out = e.mutable_output();
      out->set_job_id(jobId);
      out->set_rank(rankId);
      out->set_stream(stream);
      out->set_data(data.data(), data.size());
      events_.deliver(owner, std::move(e));
    };
    auto onDone = [this, jobId, rankId] {
      auto it = jobs_.find(jobId);
      if (it == jobs_.end()) return;
      auto r = it->second->ranks.find(rankId);
      if (r == it->second->ranks.end()) return;
      --r->second.openPumps;
      maybeReport(*it->second, r->second);
    };
    rank.pumps[s] = LogPump::create(io_, std::move(*fds[s]), options_.maxChunkBytes, std::move(gate),
                                    std::move(onChunk), std::move(onDone));
    ++rank.openPumps;
  }
  for (auto& pump : rank.pumps) pump->start();
}

void ProcessTable::signalJob(const std::string& jobId, int signal) {
  DSRUN_CHECK_THREAD(thread_);
  auto it = jobs_.find(jobId);
  if (it == jobs_.end()) return;
  Job& job = *it->second;
  // The first stop sends only the signal asked for: a rank that handles SIGINT (Ctrl-C) must not get
  // SIGTERM as well.
  const JobDecision decision =
      stopsJob(signal) ? job.controller->onStopSignal(signal, nowSeconds()) : job.controller->onUserSignal(signal);
  carryOut(job, decision, strCat("signal ", signal, " requested"));
}

void ProcessTable::carryOut(Job& job, const JobDecision& decision, const std::string& why) {
  if (decision.action == JobDecision::Action::None) return;
  if (decision.action == JobDecision::Action::Stop) {
    DSRUN_LOG(INFO) << "job " << job.id << ": stopping (" << why << "), SIGKILL in " << job.grace.count() << " ms";
  }
  for (auto& [id, rank] : job.ranks) {
    if (!job.controller->running(rank.slot)) continue;
    if (decision.action == JobDecision::Action::Kill) {
      DSRUN_LOG(WARN) << "job " << job.id << " rank " << id << ": pid " << rank.pid
                      << " " << why << ", sending SIGKILL";
    }
    spawner_.signalGroup(rank.pid, decision.signal);
  }
  if (decision.action == JobDecision::Action::Abandon) {
    giveUp(job);
    return;
  }
  const std::optional<double> deadline = job.controller->nextDeadline();
  // After a stop the grace, after SIGKILL the kill wait: the same timer, the controller knows which.
  if ((decision.action != JobDecision::Action::Stop && decision.action != JobDecision::Action::Kill) || !deadline) {
    return;
  }
  job.killTimer->expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(std::max(0.0, *deadline - nowSeconds()))));
  job.killTimer->async_wait([this, jobId = job.id, at = *deadline](const boost::system::error_code& ec) {
    if (!ec) escalate(jobId, at);
  });
}

void ProcessTable::giveUp(Job& job) {
  for (auto& [id, rank] : job.ranks) {
    if (!job.controller->abandoned(rank.slot) || rank.reaped) continue;
    // Uninterruptible sleep (a dead NFS mount, a hung driver): SIGKILL waits until the kernel lets go. Report it
    // as killed, with its state, so that the launcher's job ends; its pipes are closed, not drained.
    rank.givenUpState = processState(rank.pid);
    if (rank.givenUpState.empty()) rank.givenUpState = "unknown";
    DSRUN_LOG(WARN) << "job " << job.id << " rank " << id << ": pid " << rank.pid << " still alive " << kKillWaitS
                    << "s after SIGKILL, in state " << rank.givenUpState << "; giving up on it";
    rank.reaped = true;
    rank.waitStatus = SIGKILL;
    rank.exitTime = std::chrono::system_clock::now();
    for (auto& pump : rank.pumps) {
      if (pump) pump->close();
    }
    maybeReport(job, rank);
  }
}

void ProcessTable::escalate(const std::string& jobId, double deadline) {
  auto it = jobs_.find(jobId);
  if (it == jobs_.end()) return;
  // The timer was set for this deadline: it has passed, whatever rounding the clock conversion did.
  for (const JobDecision& decision : it->second->controller->onTime(std::max(nowSeconds(), deadline))) {
    carryOut(*it->second, decision, "outlived the grace period");
  }
}

void ProcessTable::stopJobsOf(uint64_t owner, const std::string& why) {
  DSRUN_CHECK_THREAD(thread_);
  for (auto& [id, job] : jobs_) {
    if (job->owner == owner) carryOut(*job, job->controller->requestStop(SIGTERM, nowSeconds()), why);
  }
}

void ProcessTable::stopAll(std::function<void()> onEmpty) {
  DSRUN_CHECK_THREAD(thread_);
  onEmpty_ = std::move(onEmpty);
  for (auto& [id, job] : jobs_) carryOut(*job, job->controller->requestStop(SIGTERM, nowSeconds()), "agent shutting down");
  if (jobs_.empty()) boost::asio::post(io_, [fn = std::exchange(onEmpty_, nullptr)] { fn(); });
}

void ProcessTable::killAll() {
  DSRUN_CHECK_THREAD(thread_);
  for (auto& [id, job] : jobs_) carryOut(*job, job->controller->abort(), "killed with every rank of the agent");
}

void ProcessTable::close() {
  boost::system::error_code ignored;
  sigchld_.cancel(ignored);
}

void ProcessTable::armReaper() {
  sigchld_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    reap();
    armReaper();
  });
}

void ProcessTable::reap() {
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;  // 0: none ready; -1/ECHILD: no children left
    onReaped(pid, status);
  }
}

void ProcessTable::onReaped(pid_t pid, int status) {
  auto p = pidToJob_.find(pid);
  if (p == pidToJob_.end()) return;  // not a rank (cannot happen in the agent; tests may fork)
  const std::string jobId = p->second;
  pidToJob_.erase(p);
  auto it = jobs_.find(jobId);
  if (it == jobs_.end()) return;
  Job& job = *it->second;
  for (auto& [id, rank] : job.ranks) {
    if (rank.pid != pid) continue;
    rank.reaped = true;
    rank.waitStatus = status;
    rank.exitTime = std::chrono::system_clock::now();
    job.controller->onRankExit(rank.slot, status, nowSeconds());
    // Whatever the rank left in its process group dies with it (as in the local launcher), which also
    // closes pipes a background grandchild would otherwise hold open.
    spawner_.signalGroup(pid, SIGKILL);
    if (rank.openPumps > 0) armDrainTimer(jobId, id);
    maybeReport(job, rank);
    return;
  }
}

void ProcessTable::armDrainTimer(const std::string& jobId, int rankId) {
  auto j = jobs_.find(jobId);
  if (j == jobs_.end()) return;
  Rank& rank = j->second->ranks[rankId];
  if (!rank.drainTimer) rank.drainTimer = std::make_unique<boost::asio::steady_timer>(io_);
  rank.drainedBytes = 0;
  for (auto& pump : rank.pumps) rank.drainedBytes += pump ? pump->bytesRead() : 0;
  // A grandchild outside the rank's process group may hold the pipes open for ever; only a stream
  // that stays silent for drainAfterExit is closed. A stream paused by flow control (the launcher
  // is slow) or still delivering is not stuck: closing it would drop output the rank wrote.
  rank.drainTimer->expires_after(options_.drainAfterExit);
  rank.drainTimer->async_wait([this, jobId, rankId](const boost::system::error_code& ec) {
    if (ec) return;
    auto jj = jobs_.find(jobId);
    if (jj == jobs_.end()) return;
    auto r = jj->second->ranks.find(rankId);
    if (r == jj->second->ranks.end() || r->second.reported) return;
    uint64_t readNow = 0;
    bool paused = false;
    for (auto& pump : r->second.pumps) {
      if (!pump) continue;
      readNow += pump->bytesRead();
      paused = paused || (!pump->done() && pump->paused());
    }
    if (paused || readNow != r->second.drainedBytes) {
      armDrainTimer(jobId, rankId);
      return;
    }
    DSRUN_LOG(WARN) << "job " << jobId << " rank " << rankId << ": output pipe still open " << options_.drainAfterExit.count()
                    << " ms after the rank exited and silent (a process outside its group holds it); closing it";
    for (auto& pump : r->second.pumps) {
      if (pump) pump->close();
    }
  });
}

void ProcessTable::maybeReport(Job& job, Rank& rank) {
  if (!rank.reaped || (rank.openPumps > 0 && rank.givenUpState.empty()) || rank.reported) return;
  rank.reported = true;
  if (rank.drainTimer) rank.drainTimer->cancel();
  Envelope e;
  auto* exited = e.mutable_rank_exited();
  exited->set_job_id(job.id);
  exited->set_rank(rank.rank);
  exited->set_pid(rank.pid);
  exited->set_exit_time_unix_us(
      std::chrono::duration_cast<std::chrono::microseconds>(rank.exitTime.time_since_epoch()).count());
  if (WIFSIGNALED(rank.waitStatus)) {
    exited->set_signal(WTERMSIG(rank.waitStatus));
    if (!rank.givenUpState.empty()) {
      exited->set_given_up_state(rank.givenUpState);
    } else if (WTERMSIG(rank.waitStatus) == SIGKILL) {
      if (std::optional<std::string> source = oomLog_.oomKilled(rank.pid)) exited->set_oom_evidence(*source);
    }
    DSRUN_LOG(INFO) << "job " << job.id << " rank " << rank.rank << ": pid " << rank.pid << " killed by signal "
                    << WTERMSIG(rank.waitStatus);
  } else {
    exited->set_exit_code(WEXITSTATUS(rank.waitStatus));
    DSRUN_LOG(INFO) << "job " << job.id << " rank " << rank.rank << ": pid " << rank.pid << " exited with code "
                    << WEXITSTATUS(rank.waitStatus);
  }
  events_.deliver(job.owner, std::move(e));
  boost::asio::post(io_, [this, jobId = job.id] { maybeFinish(jobId); });
}

void ProcessTable::maybeFinish(const std::string& jobId) {
  auto it = jobs_.find(jobId);
  if (it == jobs_.end()) return;
  Job& job = *it->second;
  if (!job.controller->done()) return;
  for (const auto& [id, rank] : job.ranks) {
    if (!rank.reported) return;
  }
  job.killTimer->cancel();
  jobs_.erase(it);
  if (jobs_.empty() && onEmpty_) boost::asio::post(io_, [fn = std::exchange(onEmpty_, nullptr)] { fn(); });
}

std::string ProcessTable::eachRankLogDir(const LaunchRequest& request) const {
  const std::string& dir = request.log().each_rank_log_dir();
  if (dir[0] != '/' && !options_.logDir.empty()) return options_.logDir + "/" + dir;
  return dir;
}

std::set<std::string> ProcessTable::jobIds() const {
  std::set<std::string> out;
  for (const auto& [id, job] : jobs_) out.insert(id);
  return out;
}

std::set<std::string> ProcessTable::jobIdsOf(uint64_t owner) const {
  std::set<std::string> out;
  for (const auto& [id, job] : jobs_) {
    if (job->owner == owner) out.insert(id);
  }
  return out;
}

size_t ProcessTable::liveRankCount() const {
  size_t n = 0;
  for (const auto& [id, job] : jobs_) {
    for (const auto& [r, rank] : job->ranks) n += rank.reported ? 0 : 1;
  }
  return n;
}

size_t ProcessTable::pausedStreamCount() const {
  size_t n = 0;
  for (const auto& [id, job] : jobs_) {
    for (const auto& [r, rank] : job->ranks) {
      for (const auto& pump : rank.pumps) n += pump && !pump->done() && pump->paused() ? 1 : 0;
    }
  }
  return n;
}

}  // namespace dsrun::agent
