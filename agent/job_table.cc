#include "agent/job_table.h"

#include <sys/wait.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <csignal>
#include <optional>

#include "agent/progress_watch.h"
#include "common/error.h"
#include "common/logging.h"
#include "supervision/process_state.h"
#include "tls/redact.h"

namespace dsrun::agent {

struct JobTable::Rank {
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
  std::string givenUpState;  ///< non-empty: alive killWait after SIGKILL (state D), given up in this state
};

struct JobTable::Job {
  JobSpec spec;
  uint64_t owner = 0;
  std::chrono::milliseconds grace{0};
  std::unique_ptr<JobController> controller;  ///< decides when to stop and to kill
  std::unique_ptr<boost::asio::steady_timer> killTimer;
  std::map<int, Rank> ranks;
  std::unique_ptr<ProgressWatch> progress;  ///< JobSpec::progressIntervalS > 0
};

namespace {

bool stopsJob(int signal) { return signal == SIGTERM || signal == SIGINT || signal == SIGHUP || signal == SIGKILL; }

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// The agent's part of the job's policy: it stops and kills when told; a rank's failure is the
/// launcher's to judge, and a signal while stopping is passed on as is.
JobControllerOptions controllerOptions(std::chrono::milliseconds grace, std::chrono::milliseconds killWait) {
  JobControllerOptions options;
  options.killGraceS = std::chrono::duration<double>(grace).count();
  options.killWaitS = std::chrono::duration<double>(killWait).count();
  options.rankFailureStops = false;
  options.whileStopping = SignalWhileStopping::Forward;
  return options;
}

}  // namespace

JobTable::JobTable(boost::asio::io_context& io, Spawner& spawner, JobEvents& events, Options options)
    : io_(io),
      spawner_(spawner),
      events_(events),
      options_(std::move(options)),
      starter_(io, spawner, RankStarter::Options{options_.logDir, options_.baseEnv, options_.maxChunkBytes}) {}

JobTable::~JobTable() {
  // Last resort (normal shutdown goes through stopAll): never leave a rank behind.
  for (const auto& [pid, jobId] : pidToJob_) spawner_.signalGroup(pid, SIGKILL);
}

void JobTable::launch(uint64_t owner, const JobSpec& spec) {
  DSRUN_CHECK_THREAD(thread_);
  DSRUN_CHECK(jobs_.count(spec.id) == 0, "job '", spec.id, "' launched twice");
  auto job = std::make_unique<Job>();
  job->spec = spec;
  job->owner = owner;
  job->grace = spec.killGraceS > 0 ? std::chrono::milliseconds(static_cast<long long>(spec.killGraceS * 1000))
                                   : options_.killGrace;
  job->killTimer = std::make_unique<boost::asio::steady_timer>(io_);
  job->controller =
      std::make_unique<JobController>(spec.ranks.size(), controllerOptions(job->grace, options_.killWait));
  if (spec.progressIntervalS > 0) {
    const auto interval =
        std::chrono::milliseconds(std::max(10LL, static_cast<long long>(spec.progressIntervalS * 1000)));
    job->progress = std::make_unique<ProgressWatch>(io_, spec.id, interval, [this, id = spec.id](int rank, int64_t step) {
      if (const auto owner = ownerOf(id)) events_.deliver(*owner, event::Progress{id, rank, step});
    });
  }
  Job& ref = *job;
  jobs_[spec.id] = std::move(job);
  DSRUN_LOG(INFO) << "job " << spec.id << ": launching " << spec.ranks.size() << " rank(s)";
  for (size_t slot = 0; slot < spec.ranks.size(); ++slot) {
    const RankSpec& rankSpec = ref.spec.ranks[slot];
    try {
      startRank(ref, slot);
    } catch (const dsrun::Error& e) {
      const std::string why = strCat(options_.hostName, " rank ", rankSpec.rank, ": ", e.what());
      DSRUN_LOG(WARN) << "job " << spec.id << ": " << why;
      std::vector<int> unstarted;
      for (size_t later = slot; later < ref.spec.ranks.size(); ++later) unstarted.push_back(ref.spec.ranks[later].rank);
      events_.deliver(owner, event::LaunchFailed{spec.id, why, std::move(unstarted)});
      const double now = nowSeconds();
      carryOut(ref, ref.controller->onSpawnFailed(TimedFailure{secondsToMicros(now), 1, why, options_.hostName}, now),
               "a rank could not be started");
      maybeFinish(spec.id);
      return;
    }
    const Rank& rank = ref.ranks[rankSpec.rank];
    DSRUN_LOG(DEBUG) << "job " << spec.id << " rank " << rankSpec.rank << ": pid " << rank.pid << " argv "
                     << join(tls::redactArgv(rankSpec.command.argv), " ");
    events_.deliver(owner, event::Started{spec.id, rankSpec.rank, rank.pid});
  }
}

void JobTable::startRank(Job& job, size_t slot) {
  const RankSpec& spec = job.spec.ranks[slot];
  const std::string jobId = job.spec.id;
  const int rankId = spec.rank;
  OutputSink sink;
  // The owner is looked up each time: an adopted tree job changes hands while its ranks run (reassign).
  sink.gate = FlowGate{[this, jobId] {
                         const auto owner = ownerOf(jobId);
                         return owner && events_.congested(*owner);
                       },
                       [this, jobId](std::function<void()> resume) {
                         const auto owner = ownerOf(jobId);
                         if (owner) {
                           events_.whenDrained(*owner, std::move(resume));
                         } else {
                           resume();
                         }
                       }};
  sink.onChunk = [this, jobId, rankId](OutputStream stream, std::string_view data) {
    if (const auto owner = ownerOf(jobId)) events_.deliver(*owner, event::Output{jobId, rankId, stream, std::string(data)});
  };
  sink.onStreamDone = [this, jobId, rankId] {
    auto it = jobs_.find(jobId);
    if (it == jobs_.end()) return;
    auto r = it->second->ranks.find(rankId);
    if (r == it->second->ranks.end()) return;
    --r->second.openPumps;
    maybeReport(*it->second, r->second);
  };
  StartedRank started =
      starter_.start(job.spec, spec, job.progress ? job.progress->fileFor(spec.rank) : std::string(), std::move(sink));
  Rank& rank = job.ranks[spec.rank];
  rank.rank = spec.rank;
  rank.pid = started.pid;
  rank.slot = slot;
  for (int s = 0; s < 2; ++s) {
    rank.pumps[s] = std::move(started.pumps[s]);
    if (rank.pumps[s]) ++rank.openPumps;
  }
  pidToJob_[started.pid] = jobId;
  job.controller->rankStarted(slot);
}

void JobTable::signalJob(const std::string& jobId, int signal) {
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

void JobTable::carryOut(Job& job, const JobDecision& decision, const std::string& why) {
  if (decision.action == JobDecision::Action::None) return;
  if (decision.action == JobDecision::Action::Stop) {
    DSRUN_LOG(INFO) << "job " << job.spec.id << ": stopping (" << why << "), SIGKILL in " << job.grace.count() << " ms";
  }
  for (auto& [id, rank] : job.ranks) {
    if (!job.controller->running(rank.slot)) continue;
    if (decision.action == JobDecision::Action::Kill) {
      DSRUN_LOG(WARN) << "job " << job.spec.id << " rank " << id << ": pid " << rank.pid << " " << why
                      << ", sending SIGKILL";
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
  job.killTimer->async_wait([this, jobId = job.spec.id, at = *deadline](const boost::system::error_code& ec) {
    if (!ec) escalate(jobId, at);
  });
}

void JobTable::giveUp(Job& job) {
  for (auto& [id, rank] : job.ranks) {
    if (!job.controller->abandoned(rank.slot) || rank.reaped) continue;
    // Uninterruptible sleep (a dead NFS mount, a hung driver): SIGKILL waits until the kernel lets go. Report it
    // as killed, with its state, so that the launcher's job ends; its pipes are closed, not drained.
    rank.givenUpState = processState(rank.pid);
    if (rank.givenUpState.empty()) rank.givenUpState = "unknown";
    DSRUN_LOG(WARN) << "job " << job.spec.id << " rank " << id << ": pid " << rank.pid << " still alive "
                    << std::chrono::duration<double>(options_.killWait).count() << "s after SIGKILL, in state "
                    << rank.givenUpState << "; giving up on it";
    rank.reaped = true;
    rank.waitStatus = SIGKILL;
    rank.exitTime = std::chrono::system_clock::now();
    for (auto& pump : rank.pumps) {
      if (pump) pump->close();
    }
    maybeReport(job, rank);
  }
}

void JobTable::escalate(const std::string& jobId, double deadline) {
  auto it = jobs_.find(jobId);
  if (it == jobs_.end()) return;
  // The timer was set for this deadline: it has passed, whatever rounding the clock conversion did.
  for (const JobDecision& decision : it->second->controller->onTime(std::max(nowSeconds(), deadline))) {
    carryOut(*it->second, decision, "outlived the grace period");
  }
}

void JobTable::stopJobsOf(uint64_t owner, const std::string& why) {
  DSRUN_CHECK_THREAD(thread_);
  for (auto& [id, job] : jobs_) {
    if (job->owner == owner) carryOut(*job, job->controller->requestStop(SIGTERM, nowSeconds()), why);
  }
}

void JobTable::stopAll(std::function<void()> onEmpty) {
  DSRUN_CHECK_THREAD(thread_);
  onEmpty_ = std::move(onEmpty);
  for (auto& [id, job] : jobs_) carryOut(*job, job->controller->requestStop(SIGTERM, nowSeconds()), "agent shutting down");
  if (jobs_.empty()) boost::asio::post(io_, [fn = std::exchange(onEmpty_, nullptr)] { fn(); });
}

void JobTable::killAll() {
  DSRUN_CHECK_THREAD(thread_);
  for (auto& [id, job] : jobs_) carryOut(*job, job->controller->abort(), "killed with every rank of the agent");
}

void JobTable::onReaped(pid_t pid, int status) {
  DSRUN_CHECK_THREAD(thread_);
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

void JobTable::armDrainTimer(const std::string& jobId, int rankId) {
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

void JobTable::maybeReport(Job& job, Rank& rank) {
  if (!rank.reaped || (rank.openPumps > 0 && rank.givenUpState.empty()) || rank.reported) return;
  rank.reported = true;
  if (rank.drainTimer) rank.drainTimer->cancel();
  const std::string& jobId = job.spec.id;
  if (!rank.givenUpState.empty()) {
    DSRUN_LOG(INFO) << "job " << jobId << " rank " << rank.rank << ": pid " << rank.pid << " killed by signal "
                    << SIGKILL;
    events_.deliver(job.owner, event::GivenUp{jobId, rank.rank, rank.pid, rank.givenUpState, rank.exitTime});
  } else {
    event::Exited exited{jobId, rank.rank, rank.pid, std::nullopt, 0, "", rank.exitTime};
    if (WIFSIGNALED(rank.waitStatus)) {
      exited.signal = WTERMSIG(rank.waitStatus);
      if (*exited.signal == SIGKILL) exited.oomEvidence = oomLog_.oomKilled(rank.pid).value_or("");
      DSRUN_LOG(INFO) << "job " << jobId << " rank " << rank.rank << ": pid " << rank.pid << " killed by signal "
                      << *exited.signal;
    } else {
      exited.exitCode = WEXITSTATUS(rank.waitStatus);
      DSRUN_LOG(INFO) << "job " << jobId << " rank " << rank.rank << ": pid " << rank.pid << " exited with code "
                      << exited.exitCode;
    }
    events_.deliver(job.owner, std::move(exited));
  }
  boost::asio::post(io_, [this, jobId] { maybeFinish(jobId); });
}

void JobTable::maybeFinish(const std::string& jobId) {
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

std::set<std::string> JobTable::jobIds() const {
  std::set<std::string> out;
  for (const auto& [id, job] : jobs_) out.insert(id);
  return out;
}

std::optional<uint64_t> JobTable::ownerOf(const std::string& jobId) const {
  const auto it = jobs_.find(jobId);
  if (it == jobs_.end()) return std::nullopt;
  return it->second->owner;
}

void JobTable::reassign(const std::string& jobId, uint64_t owner) {
  DSRUN_CHECK_THREAD(thread_);
  const auto it = jobs_.find(jobId);
  if (it != jobs_.end()) it->second->owner = owner;
}

std::set<std::string> JobTable::jobIdsOf(uint64_t owner) const {
  std::set<std::string> out;
  for (const auto& [id, job] : jobs_) {
    if (job->owner == owner) out.insert(id);
  }
  return out;
}

size_t JobTable::liveRankCount() const {
  size_t n = 0;
  for (const auto& [id, job] : jobs_) {
    for (const auto& [r, rank] : job->ranks) n += rank.reported ? 0 : 1;
  }
  return n;
}

size_t JobTable::pausedStreamCount() const {
  size_t n = 0;
  for (const auto& [id, job] : jobs_) {
    for (const auto& [r, rank] : job->ranks) {
      for (const auto& pump : rank.pumps) n += pump && !pump->done() && pump->paused() ? 1 : 0;
    }
  }
  return n;
}

}  // namespace dsrun::agent
