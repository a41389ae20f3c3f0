#include "supervision/signal_pipe.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "common/error.h"

namespace dsrun {
namespace {

std::atomic<int> handlerFd{-1};
std::atomic<int> firstStopSignal{0};

void onSignal(int signal) {
  int savedErrno = errno;
  noteStopSignal(signal);
  unsigned char byte = static_cast<unsigned char>(signal);
  // Non-blocking: if the pipe is full the loop is already awake and reaps with WNOHANG anyway.
  ssize_t ignored = ::write(handlerFd.load(), &byte, 1);
  (void)ignored;
  errno = savedErrno;
}

}  // namespace

void noteStopSignal(int signal) {
  if (signal != SIGINT && signal != SIGTERM && signal != SIGHUP) return;
  int none = 0;
  firstStopSignal.compare_exchange_strong(none, signal);
}

int stopSignalNoted() { return firstStopSignal.load(); }

SignalPipe::SignalPipe(const std::vector<int>& forwarded) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw IoError("", "pipe2", errno, "catching signals");
  readEnd_.reset(fds[0]);
  writeEnd_.reset(fds[1]);
  int none = -1;
  DSRUN_CHECK(handlerFd.compare_exchange_strong(none, writeEnd_.get()), "only one SignalPipe may exist at a time");

  auto install = [this](int signal, void (*handler)(int)) {
    struct sigaction action {};
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART | (signal == SIGCHLD ? SA_NOCLDSTOP : 0);
    Saved saved{signal, {}};
    if (::sigaction(signal, &action, &saved.action) == 0) saved_.push_back(saved);
  };
  for (int signal : forwarded) {
    struct sigaction current {};
    ::sigaction(signal, nullptr, &current);
    if (current.sa_handler == SIG_IGN && (current.sa_flags & SA_SIGINFO) == 0) continue;
    install(signal, onSignal);
  }
  install(SIGCHLD, onSignal);  // always: an inherited SIG_IGN would make the kernel reap our ranks
  install(SIGPIPE, SIG_IGN);   // a closed stdout must not kill dsrun while ranks run
  // A caller that blocked these would never wake the loop (no pipe wakes it in each-rank-log mode).
  sigset_t wanted;
  sigemptyset(&wanted);
  for (const Saved& saved : saved_) sigaddset(&wanted, saved.signal);
  ::pthread_sigmask(SIG_UNBLOCK, &wanted, &oldMask_);
}

SignalPipe::~SignalPipe() {
  ::pthread_sigmask(SIG_SETMASK, &oldMask_, nullptr);
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) ::sigaction(it->signal, &it->action, nullptr);
  handlerFd.store(-1);
}

std::vector<int> SignalPipe::drain() {
  std::vector<int> out;
  unsigned char buffer[256];
  ssize_t n;
  while ((n = ::read(readEnd_.get(), buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)) {
    for (ssize_t i = 0; i < n; ++i) out.push_back(buffer[i]);
  }
  return out;
}

}  // namespace dsrun
