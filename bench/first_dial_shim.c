/* LD_PRELOAD shim for bench/launch_predial.py: at each of dsrun's first connect() calls to port
 * DIAL_SHIM_PORT it writes one line to stderr with the process's CPU time so far (every thread, CLOCK_PROCESS_CPUTIME_ID)
 * and the wall clock, and at the DIAL_SHIM_EXIT_AT-th it ends the process (_exit(0)) before the dial: what dsrun
 * did before it, and nothing after, is measured. The first such connect is the rendezvous (learnAgentRendezvous,
 * the first host's agent), the second the first root of the launch (AgentJob::connectAll).
 *   DIAL_SHIM_PORT=29600 DIAL_SHIM_EXIT_AT=2 LD_PRELOAD=first_dial_shim.so dsrun ...
 * Built by launch_predial.py with the system C compiler; not part of dsrun. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double ms(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int connect(int fd, const struct sockaddr* addr, socklen_t len) {
  static int (*real)(int, const struct sockaddr*, socklen_t);
  static int port = -1, exitAt = 0, seen = 0;
  if (real == NULL) real = (int (*)(int, const struct sockaddr*, socklen_t))dlsym(RTLD_NEXT, "connect");
  if (port < 0) {
    const char* p = getenv("DIAL_SHIM_PORT");
    const char* e = getenv("DIAL_SHIM_EXIT_AT");
    port = p ? atoi(p) : 0;
    exitAt = e ? atoi(e) : 0;
  }
  if (addr != NULL && addr->sa_family == AF_INET && ntohs(((const struct sockaddr_in*)addr)->sin_port) == port) {
    ++seen;
    char line[160];
    const int n = snprintf(line, sizeof line, "DIAL_SHIM dial %d cpu_ms %.3f wall_ms %.3f\n", seen,
                           ms(CLOCK_PROCESS_CPUTIME_ID), ms(CLOCK_REALTIME));
    if (write(2, line, (size_t)n) < 0) _exit(3);
    if (seen == exitAt) _exit(0);
  }
  return real(fd, addr, len);
}
