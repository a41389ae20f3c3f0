#include "supervision/local_job_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <optional>

#include "supervision/launch_lines.h"
#include "common/error.h"
#include "common/logging.h"
#include "supervision/orphan_sweeper.h"
#include "supervision/pid_file.h"
#include "supervision/rank_log.h"
#include "common/root_cause.h"
#include "supervision/stack_files.h"
#include "common/strings.h"

namespace dsrun {
namespace {

constexpr size_t kReadChunk = 64 * 1024;
/// Reads per stream per wake-up, so one chatty rank cannot starve the others or the signals.
constexpr int kReadsPerWake = 4;
/// After every process of the job is dead, pipes reach EOF at once; this only bounds a pathological case.
constexpr double kDrainLimitS = 5;
/// Least time between two signals from control lines. Lines can arrive in one batch (pdsh's signal
/// command carries everything dsrun received meanwhile), and a signal sent to a rank that has not yet
/// handled the previous one of its kind is merged with it by the kernel (Python even merges across
/// handler runs): one batch of USR1, USR1, USR2 arrived as one USR1 and one USR2 on the test cluster.
constexpr double kControlGapS = 0.1;
/// Per rank, how long taking its stacks may last (a debugger attaching to a process in state D waits forever).
constexpr double kStackTimeoutS = 5;

// The last lines of a rank's log file (stdout and stderr together there): its end is read, not all of it.
std::vector<std::string> tailOfFile(const std::string& path) {
  constexpr off_t kTailBytes = 8192;
  std::vector<std::string> tail;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return tail;
  const off_t size = ::lseek(fd.get(), 0, SEEK_END);
  const off_t start = size > kTailBytes ? size - kTailBytes : 0;
  std::string text(static_cast<size_t>(size - start), '\0');
  const ssize_t n = ::pread(fd.get(), text.data(), text.size(), start);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  std::vector<std::string> lines = split(text, '\n');
  if (start > 0 && !lines.empty()) lines.erase(lines.begin());  // cut in the middle
  for (const std::string& line : lines) {
    if (!line.empty()) keepTailLine(tail, line);
  }
  return tail;
}

}  // namespace

double monotonicSeconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

LocalJobRunner::LocalJobRunner(const std::vector<RankSpec>& ranks, const LocalJobOptions& options, HangWatch* hang)
    : ranks_(ranks),
      options_(options),
      supervisor_(ranks, SupervisorOptions{options.stop, options.announceCleanExit,
                                        [this](pid_t pid) { return oomLog_.oomKilled(pid); }}, spawner_),
      signals_({SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}),
      stdout_(STDOUT_FILENO),
      stderr_(STDERR_FILENO),
      hang_(hang) {
  if (hang_ != nullptr) nextHangCheck_ = monotonicSeconds() + hang_->checkPeriodS();
  for (int fd : options_.controlFds) controls_.push_back(Control{fd, LineBuffer(1024)});
}

int LocalJobRunner::run() {
  std::optional<PidFile> pidFile;
  if (options_.savePid != 0) pidFile.emplace(options_.savePid);
  OrphanSweeper sweeper;
  try {
    startRanks();
    while (!supervisor_.done()) step(pollTimeoutMs());
  } catch (...) {
    supervisor_.abort();
    sweeper.sweep();
    throw;
  }
  for (pid_t pid : supervisor_.abandonedPids()) sweeper.leave(pid);
  sweeper.sweep();
  drainOutput();
  printNotices();
  printRootCause();
  if (supervisor_.spawnError()) throw *supervisor_.spawnError();
  return supervisor_.exitCode();
}

void LocalJobRunner::startRanks() {
  // Log files are opened before anything starts, so a bad directory leaves nothing to clean up.
  std::vector<UniqueFd> logs;
  tails_.assign(ranks_.size(), {});
  logPaths_.assign(ranks_.size(), "");
  if (!options_.eachRankLogDir.empty()) {
    prepareRankLogDir(options_.eachRankLogDir);
    std::string prefix = rankLogPrefix(std::time(nullptr));
    for (size_t i = 0; i < ranks_.size(); ++i) {
      logPaths_[i] = rankLogPath(options_.eachRankLogDir, prefix, ranks_[i].rank);
      logs.push_back(openRankLog(logPaths_[i], ranks_[i].rank));
    }
    // Said once at the start: with the output in files, the terminal would otherwise stay silent.
    if (!ranks_.empty()) {
      const std::string host = ranks_.front().host.empty() ? "localhost" : ranks_.front().host;
      std::string pattern = rankLogPath(options_.eachRankLogDir, prefix, 0);
      pattern.replace(pattern.size() - std::string("0.log").size(), std::string::npos, "<RANK>.log");
      stderr_.write("", strCat("dsrun: ranks ", ranks_.front().rank, "-", ranks_.back().rank, " on ", host,
                               " write their output to ", pattern));
    }
  }
  // A rank in its own process group that reads the terminal would be stopped by SIGTTIN forever.
  bool stdinIsTerminal = ::isatty(STDIN_FILENO) == 1;
  for (size_t i = 0; i < ranks_.size() && !supervisor_.stopping(); ++i) {
    SpawnOptions spawnOptions;
    spawnOptions.cores = ranks_[i].cores;
    spawnOptions.stdinNull = stdinIsTerminal;
    if (!logs.empty()) {
      spawnOptions.output = OutputMode::File;
      spawnOptions.outputFd = logs[i].get();
    }
    std::optional<Subprocess> child = supervisor_.start(i, spawnOptions, monotonicSeconds());
    if (logs.size() > i) logs[i].reset();
    if (child && child->stdoutFd.valid()) {
      const RankSpec& spec = ranks_[i];
      std::string prefix =
          options_.tagOutput ? strCat(spec.host.empty() ? "localhost" : spec.host, ":", spec.rank, " | ") : "";
      streams_.push_back(Stream{std::move(child->stdoutFd), LineBuffer(), &stdout_, prefix, i, false});
      streams_.push_back(Stream{std::move(child->stderrFd), LineBuffer(), &stderr_, prefix, i, true});
    }
    handleSignals();  // a SIGTERM during a long start-up stops the remaining spawns
  }
}

void LocalJobRunner::step(int timeoutMs) {
  std::vector<pollfd> fds;
  fds.push_back({signals_.fd(), POLLIN, 0});
  for (const Stream& stream : streams_) fds.push_back({stream.fd.get(), POLLIN, 0});
  // Control lines stop mattering once the job is done: a controller that closes the channel while this
  // node drains its output must not turn a finished job into a SIGTERMed one.
  const bool controlled = !supervisor_.done();
  if (controlled) {
    for (const Control& control : controls_) fds.push_back({control.fd, POLLIN, 0});
  }
  if (::poll(fds.data(), fds.size(), timeoutMs) < 0 && errno != EINTR) {
    throw IoError("", "poll", errno, "supervising the ranks");
  }
  handleSignals();
  if (controlled) {
    const size_t first = 1 + streams_.size();
    for (size_t i = controls_.size(); i-- > 0;) {
      if (fds[first + i].revents == 0) continue;
      if (!readControl(controls_[i])) controls_.erase(controls_.begin() + static_cast<long>(i));
    }
    deliverControlSignals();
  }
  // Walk backwards so erasing a finished stream does not shift the ones still to visit.
  for (size_t i = streams_.size(); i-- > 0;) {
    if (fds[i + 1].revents == 0) continue;
    if (!readStream(streams_[i])) {
      closeStream(streams_[i]);
      streams_.erase(streams_.begin() + static_cast<long>(i));
    }
  }
  supervisor_.onTime(monotonicSeconds());
  if (hang_ != nullptr && monotonicSeconds() >= nextHangCheck_) checkHang();
  printNotices();
}

void LocalJobRunner::checkHang() {
  const double now = monotonicSeconds();
  nextHangCheck_ = now + hang_->checkPeriodS();
  if (supervisor_.stopping()) return;
  hang_->poll(now);
  const std::vector<int> stuck = hang_->stuck(now);
  if (stuck.empty()) return;
  // The stacks of every running rank, not only the stuck ones: the rank a collective waits on is the culprit.
  const std::string dir = strCat(options_.hangDir.empty() ? "." : options_.hangDir, "/dsrun-hang-", options_.jobId);
  std::string where = dir;
  try {
    writeStackFiles(dir, collectLocalStacks(supervisor_.runningPids(), kStackTimeoutS));
  } catch (const Error& e) {
    where = strCat("not written: ", e.what());
  }
  std::vector<std::string> names;
  for (int rank : stuck) names.push_back(strCat(rank, " (step ", hang_->step(rank), ")"));
  std::string host;
  for (const RankSpec& spec : ranks_) {
    if (spec.rank == stuck.front()) host = spec.host.empty() ? "localhost" : spec.host;
  }
  supervisor_.onHang(strCat("no progress for ", hang_->timeoutS(), " s (--hang_timeout_s) by rank",
                            stuck.size() == 1 ? " " : "s ", join(names, ", "), " on ", host, "; stacks of every rank: ",
                            where),
                     host, monotonicSeconds());
}

void LocalJobRunner::handleSignals() {
  for (int signal : signals_.drain()) {
    if (signal != SIGCHLD) supervisor_.onSignal(signal, monotonicSeconds());
  }
  // Reap on every wake-up, not only on SIGCHLD: signals coalesce and the pipe may drop bytes when full.
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) supervisor_.onExit(pid, status, monotonicSeconds());
  printNotices();
}

bool LocalJobRunner::readStream(Stream& stream) {
  char buffer[kReadChunk];
  for (int i = 0; i < kReadsPerWake; ++i) {
    ssize_t n = ::read(stream.fd.get(), buffer, sizeof buffer);
    if (n > 0) {
      bytesRead_ += static_cast<uint64_t>(n);
      stream.lines.feed(std::string_view(buffer, static_cast<size_t>(n)),
                        [&](std::string_view line) { forward(stream, line); });
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return true;
    } else {
      return false;  // EOF, or an error that ends this stream
    }
  }
  return true;
}

bool LocalJobRunner::readControl(Control& control) {
  // One read per wake-up: poll() said it will not block, and the descriptor may be a blocking one (stdin).
  char buffer[512];
  const ssize_t n = ::read(control.fd, buffer, sizeof buffer);
  if (n > 0) {
    control.lines.feed(std::string_view(buffer, static_cast<size_t>(n)),
                       [&](std::string_view line) { onControlLine(line); });
    return true;
  }
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return true;
  // End of file (or an error that ends the channel): the controller is gone, as if it had sent SIGTERM.
  control.lines.finish([&](std::string_view line) { onControlLine(line); });
  controlSignals_.push_back(SIGTERM);
  return false;
}

void LocalJobRunner::onControlLine(std::string_view line) {
  if (std::optional<int> signal = parseControlLine(line)) {
    controlSignals_.push_back(*signal);
    return;
  }
  DSRUN_LOG(WARN) << "control channel: ignoring a line this version does not know, got '" << line << "'";
}

void LocalJobRunner::deliverControlSignals() {
  while (!controlSignals_.empty()) {
    const double now = monotonicSeconds();
    if (now < nextControlAt_) return;  // pollTimeoutMs() wakes the loop for it
    const int signal = controlSignals_.front();
    controlSignals_.pop_front();
    supervisor_.onSignal(signal, now);
    printNotices();
    nextControlAt_ = now + kControlGapS;
  }
}

void LocalJobRunner::closeStream(Stream& stream) {
  stream.lines.finish([&](std::string_view line) { forward(stream, line); });
  stream.fd.reset();
}

void LocalJobRunner::forward(Stream& stream, std::string_view line) {
  stream.sink->write(stream.prefix, line);
  if (stream.isStderr) keepTailLine(tails_[stream.slot], line);
}

void LocalJobRunner::printRootCause() {
  const std::optional<JobSupervisor::FirstFailure>& failure = supervisor_.firstFailure();
  if (!failure) return;
  const RankSpec& spec = ranks_[failure->index];
  RootCause cause;
  cause.rank = spec.rank;
  cause.localRank = spec.localRank;
  cause.host = spec.host.empty() ? "localhost" : spec.host;
  cause.pid = failure->pid;
  cause.cause = failure->how;
  cause.exitCode = failure->exitCode;
  cause.program = options_.program;
  cause.logFile = logPaths_[failure->index];
  cause.stderrTail = cause.logFile.empty() ? tails_[failure->index] : tailOfFile(cause.logFile);
  if (!options_.rootCauseAsLines) {
    for (const std::string& line : rootCauseBlock(cause)) stderr_.write("", line);
    return;
  }
  if (!cause.logFile.empty()) stderr_.write("", rootCauseLogLine(cause.rank, cause.host, cause.logFile));
  for (const std::string& line : cause.stderrTail) stderr_.write("", rootCauseTailLine(cause.rank, cause.host, line));
}

void LocalJobRunner::drainOutput() {
  // The limit counts silence only: time spent writing to a slow reader of dsrun's output is progress,
  // and giving up then would drop lines the ranks wrote.
  double limit = monotonicSeconds() + kDrainLimitS;
  while (!streams_.empty()) {
    double left = limit - monotonicSeconds();
    if (left <= 0) {
      DSRUN_LOG(WARN) << streams_.size() << " output pipes of the ranks are still open after every rank exited; "
                      << "dropping what they may still carry";
      break;
    }
    const uint64_t before = bytesRead_;
    step(static_cast<int>(std::ceil(left * 1000)));
    if (bytesRead_ != before) limit = monotonicSeconds() + kDrainLimitS;
  }
  for (Stream& stream : streams_) closeStream(stream);
  streams_.clear();
}

void LocalJobRunner::printNotices() {
  for (const std::string& notice : supervisor_.takeNotices()) stderr_.write("", notice);
}

int LocalJobRunner::pollTimeoutMs() const {
  std::optional<double> deadline = supervisor_.nextDeadline();
  if (hang_ != nullptr && !supervisor_.stopping() && (!deadline || nextHangCheck_ < *deadline)) deadline = nextHangCheck_;
  if (!controlSignals_.empty() && (!deadline || nextControlAt_ < *deadline)) deadline = nextControlAt_;
  if (!deadline) return -1;
  double ms = std::ceil((*deadline - monotonicSeconds()) * 1000);
  if (ms <= 0) return 0;
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

}  // namespace dsrun
