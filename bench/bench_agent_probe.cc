// What the elastic controller's probe of which hosts answer costs dsrun (launcher/backends/agent/agent_probe.h:
// one connect + mutual TLS + Hello/Welcome per candidate agent, all at once, before every world): the wall time
// of one probe of every host and this process's CPU time for it (user + sys), per round and per host.
// CPU is the figure to read on a shared machine; the wall time there measures the scheduler too.
// Usage: bench_agent_probe TLS_DIR PORT ROUNDS HOST...   (the launcher's --tls_dir, the agents' port)
#include <time.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench_clock.h"
#include "launcher/backends/agent/agent_probe.h"
#include "tls/ssl_context.h"

using dsrun::bench::cpuMs;
using dsrun::bench::wallMs;

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: bench_agent_probe TLS_DIR PORT ROUNDS HOST...\n");
    return 2;
  }
  const std::vector<std::string> hosts(argv + 4, argv + argc);
  auto ssl = dsrun::tls::makeSslContext(argv[1], dsrun::tls::Role::Client);
  const int port = std::stoi(argv[2]);
  const int rounds = std::stoi(argv[3]);
  for (int round = 0; round < rounds; ++round) {
    const double wall0 = wallMs(), cpu0 = cpuMs();
    const auto probes =
        dsrun::launcher::probeAgents(ssl, hosts, port, "bench_agent_probe", std::chrono::milliseconds(5000));
    const double wall = wallMs() - wall0, cpu = cpuMs() - cpu0;
    size_t ok = 0;
    for (const auto& p : probes) ok += p.ok ? 1 : 0;
    std::printf("hosts %zu answered %zu wall_ms %.1f cpu_ms %.1f cpu_us_per_host %.0f\n", hosts.size(), ok, wall, cpu,
                cpu * 1e3 / static_cast<double>(hosts.size()));
  }
  return 0;
}
