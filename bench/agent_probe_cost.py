#!/usr/bin/env python3
"""What the elastic controller's probe of which hosts answer costs dsrun at 64 and 256 (or other) loopback agents.

Before every world of an elastic job, dsrun dials every candidate agent once (launcher/backends/agent/agent_probe.h:
connect, mutual TLS, Hello/Welcome, close), all at once, whatever --tree_width says. This starts N dsrun-agents on
loopback addresses as bench/agent_scale.py does (its Cluster), runs build/bench/bench_agent_probe (the same
probeAgents) --rounds times against all of them, and prints the median wall time and dsrun-side CPU per round and
per host. Nothing is left running (the agents are stopped, the work directory removed).
  bench/agent_probe_cost.py [--sizes 64,256] [--rounds 5] [--build build] [--net 24]
Needs: cmake --build build --target dsrun dsrun-agent bench_agent_probe
"""
import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_scale  # noqa: E402  (its Cluster: N agents on 127.NET.X.Y, each with its node certificate)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="64,256")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--build", default="build")
    ap.add_argument("--net", type=int, default=24, help="the agents listen on 127.NET.X.Y")
    args = ap.parse_args()
    agent_scale.NET = args.net
    args.dsrun = os.path.realpath(os.path.join(args.build, "launcher/dsrun"))
    args.agent = os.path.realpath(os.path.join(args.build, "agent/dsrun-agent"))
    bench = os.path.realpath(os.path.join(args.build, "bench/bench_agent_probe"))
    for b in (args.dsrun, args.agent, bench):
        if not os.access(b, os.X_OK):
            raise SystemExit(f"agent_probe_cost.py: {b} not found (build dsrun, dsrun-agent and bench_agent_probe)")
    work = tempfile.mkdtemp(prefix="dsrun-probe-cost.")
    tls = os.path.join(work, "tls")
    subprocess.run([args.dsrun, "--make_tls", tls], check=True, stdout=subprocess.DEVNULL)
    port = 29700 + random.randrange(250)
    print("| agents | answered | wall ms per probe (median) | dsrun CPU ms per probe (median) | CPU µs per host |")
    print("|---:|---:|---:|---:|---:|")
    try:
        for count in [int(s) for s in args.sizes.split(",")]:
            cluster = agent_scale.Cluster(args, work, count, port)
            try:
                cluster.start()
                out = subprocess.run([bench, tls, str(port), str(args.rounds)] + cluster.addrs, check=True,
                                     capture_output=True, text=True).stdout
            finally:
                cluster.stop()
            rows = [dict(zip(line.split()[::2], line.split()[1::2])) for line in out.splitlines() if line.strip()]
            med = lambda key: statistics.median(float(r[key]) for r in rows)  # noqa: E731
            print(f"| {count} | {min(int(r['answered']) for r in rows)} | {med('wall_ms'):.0f} | {med('cpu_ms'):.0f} | "
                  f"{med('cpu_us_per_host'):.0f} |", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load after: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
