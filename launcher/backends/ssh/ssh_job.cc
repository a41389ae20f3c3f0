#include "launcher/backends/ssh/ssh_job.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <future>

#include "supervision/launch_lines.h"
#include "common/error.h"
#include "supervision/line_sink.h"
#include "common/logging.h"
#include "supervision/signal_pipe.h"
#include "common/strings.h"
#include "launcher/backends/ssh/ssh_channel.h"
#include "launcher/remote_job/remote_job.h"

namespace dsrun::launcher {

namespace {

/// How long one poll may wait when no deadline is nearer: the sessions are read on this beat too (libssh
/// may hold data it already took from the socket).
constexpr Seconds kPollPeriod{0.05};

}  // namespace

SshJob::SshJob(std::vector<NodeCommand> commands, Connect connect, Settings settings)
    : commands_(std::move(commands)), connect_(std::move(connect)), settings_(std::move(settings)) {}

std::vector<std::unique_ptr<SshSession>> SshJob::connectAll() {
  std::vector<std::unique_ptr<SshSession>> sessions(commands_.size());
  std::vector<std::string> errors;
  std::vector<std::string> unreachable;  // hosts, for an elastic round's outcome
  const auto failed = [&](size_t i, const Error& e) {
    errors.push_back(e.what());
    unreachable.push_back(commands_[i].host);
  };
  // The first host alone first: it is DeepSpeed's passwordless-ssh check, with the backend's own settings.
  try {
    sessions[0] = connect_(commands_[0].host);
  } catch (const Error& e) {
    if (!settings_.elasticRound) throw;
    failed(0, e);
  }
  std::vector<std::future<std::unique_ptr<SshSession>>> pending;
  for (size_t i = 1; i < commands_.size(); ++i) {
    pending.push_back(std::async(std::launch::async, [this, host = commands_[i].host] { return connect_(host); }));
  }
  for (size_t i = 1; i < commands_.size(); ++i) {
    try {
      sessions[i] = pending[i - 1].get();
    } catch (const Error& e) {
      failed(i, e);
    }
  }
  if (errors.empty()) return sessions;
  if (settings_.elasticRound) {
    outcome_.end = RoundOutcome::End::Unreachable;
    outcome_.exitCode = 255;
    outcome_.unreachable = errors;
    outcome_.lostHosts = unreachable;
    outcome_.detectedAt = std::chrono::steady_clock::now();
    return {};
  }
  throw Error(strCat(errors.front(), errors.size() > 1 ? strCat(" (and ", errors.size() - 1, " more host(s))") : "",
                     "; nothing was started"));
}

int SshJob::run() {
  std::vector<std::unique_ptr<SshSession>> sessions = connectAll();
  if (sessions.empty()) return outcome_.exitCode;
  if (settings_.elasticRound) {
    // The first beat a silent host misses leaves within one period; TCP then gives up on it after the rest
    // of the budget, so a host is declared silent within heartbeatMs x heartbeatMisses, as on agents.
    const unsigned userTimeout = static_cast<unsigned>(settings_.heartbeatMs * std::max(settings_.heartbeatMisses - 1, 1));
    for (const auto& session : sessions) {
      if (!session->setUserTimeout(userTimeout)) {
        DSRUN_LOG(WARN) << "ssh " << session->peer() << ": cannot set TCP_USER_TIMEOUT; a silent host is noticed "
                        << "only when TCP gives up";
      }
    }
  }
  return loop(std::move(sessions));
}

int SshJob::loop(std::vector<std::unique_ptr<SshSession>> sessions) {
  SignalPipe signals(controlSignals());
  std::vector<std::unique_ptr<SshChannel>> channels;
  std::vector<NodeChannel*> nodes;
  std::vector<std::string> hosts;
  for (size_t i = 0; i < sessions.size(); ++i) {
    channels.push_back(std::make_unique<SshChannel>(
        commands_[i].host, std::move(sessions[i]), join(commands_[i].argv, " "),
        SshChannel::Settings{settings_.elasticRound, settings_.heartbeatMs, settings_.heartbeatMisses}));
    nodes.push_back(channels.back().get());
    hosts.push_back(commands_[i].host);
  }
  RemoteJobSettings driverSettings;
  driverSettings.stop = settings_.stop;
  driverSettings.program = settings_.program;
  driverSettings.rankHosts = settings_.rankHosts;
  // Every job beats: dsrun-launch's relay stops its ranks when the beats stop; unacknowledged beats make
  // TCP_USER_TIMEOUT end a silent host's connection (elastic rounds).
  driverSettings.heartbeat = std::chrono::milliseconds(settings_.heartbeatMs);
  driverSettings.elasticRound = settings_.elasticRound;
  driverSettings.hooks = settings_.hooks;
  LineSink stdoutSink(1), stderrSink(2);
  RemoteJob job(std::move(hosts), std::move(nodes), std::move(driverSettings), stdoutSink, stderrSink);
  job.start(steadyNow());
  while (!job.done()) {
    std::vector<pollfd> fds{{signals.fd(), POLLIN, 0}};
    for (const auto& channel : channels) {
      if (channel->fd() >= 0) fds.push_back({channel->fd(), POLLIN, 0});
    }
    Seconds wait = kPollPeriod;
    if (const std::optional<Seconds> deadline = job.nextDeadline()) {
      wait = std::clamp(*deadline - steadyNow(), Seconds(0), kPollPeriod);
    }
    const int waitMs = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(wait).count());
    if (::poll(fds.data(), fds.size(), waitMs) < 0 && errno != EINTR) throw IoError("", "poll", errno, "ssh sessions");
    for (int s : signals.drain()) {
      if (s != SIGCHLD) job.onSignal(s, steadyNow());
    }
    for (size_t i = 0; i < channels.size(); ++i) channels[i]->pump(job, i, steadyNow());
    job.onTime(steadyNow());
  }
  const int code = job.finish();
  outcome_ = job.outcome();
  return code;
}

}  // namespace dsrun::launcher
