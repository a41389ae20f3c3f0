#include "launcher/backends/command/command_job.h"

#include <poll.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <vector>

#include "supervision/launch_lines.h"
#include "common/error.h"
#include "common/line_buffer.h"
#include "supervision/line_sink.h"
#include "supervision/signal_pipe.h"
#include "launcher/backends/command/command_channel.h"
#include "launcher/remote_job/remote_job.h"

namespace dsrun::launcher {

namespace {

/// The command medium's settings of the driver: the launcher command escalates a stop on its own clock
/// (CommandChannel), a second stop signal kills, and there is no heartbeat (pdsh, mpirun and srun keep
/// their own connections).
RemoteJobSettings driverSettings(const CommandJobSpec& spec) {
  RemoteJobSettings settings;
  settings.stop = spec.launch.stop;
  settings.nodeKillWait = std::nullopt;
  settings.whileStopping = SignalWhileStopping::Kill;
  settings.heartbeat = Seconds(0);
  settings.program = spec.program;
  settings.rankHosts = spec.rankHosts;
  return settings;
}

CommandChannel::Spec channelSpec(const CommandJobSpec& spec) {
  return CommandChannel::Spec{spec.command, spec.kill, spec.signal, spec.stopSignal, spec.launch.stop.killGrace};
}

/// One of the launcher command's output streams.
struct Stream {
  UniqueFd fd;
  LineBuffer lines;
  bool isStderr = false;
};

/// Reads what `s` has; false at its end.
bool read(Stream& s, RemoteJob& job) {
  char buffer[65536];
  const ssize_t n = ::read(s.fd.get(), buffer, sizeof buffer);
  const auto emit = [&](std::string_view line) { job.onOutput(0, s.isStderr, line, steadyNow()); };
  if (n > 0) {
    s.lines.feed(std::string_view(buffer, static_cast<size_t>(n)), emit);
    return true;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
  s.lines.finish(emit);
  return false;
}

}  // namespace

CommandJobResult runCommandJob(const CommandJobSpec& spec) {
  SignalPipe signals(controlSignals());
  LineSink out(STDOUT_FILENO), err(STDERR_FILENO);
  CommandChannel channel(channelSpec(spec), err);
  RemoteJob job({spec.command.argv.front()}, {&channel}, driverSettings(spec), out, err);
  job.start(steadyNow());
  std::vector<Stream> streams;
  streams.push_back({channel.takeStdout(), LineBuffer(), false});
  streams.push_back({channel.takeStderr(), LineBuffer(), true});
  while (!job.done() || channel.busy() || !streams.empty()) {
    std::vector<pollfd> fds{{signals.fd(), POLLIN, 0}};
    for (const Stream& s : streams) fds.push_back({s.fd.get(), POLLIN, 0});
    // Reaping also happens on a timer: SIGCHLD bytes can coalesce.
    const int timeoutMs = job.nextDeadline() ? 50 : 200;
    if (::poll(fds.data(), fds.size(), timeoutMs) < 0 && errno != EINTR) {
      throw IoError("", "poll", errno, "running " + spec.command.argv.front());
    }
    for (int signal : signals.drain()) {
      if (signal != SIGCHLD) job.onSignal(signal, steadyNow());
    }
    for (size_t i = streams.size(); i-- > 0;) {
      if (fds[i + 1].revents == 0) continue;
      if (!read(streams[i], job)) streams.erase(streams.begin() + static_cast<long>(i));
    }
    channel.tick(job, steadyNow());
    job.onTime(steadyNow());
  }
  channel.disarm();
  CommandJobResult result;
  result.exitCode = job.finish();
  result.failure = job.failure();
  result.signal = job.controller().firstSignal();
  return result;
}

}  // namespace dsrun::launcher
