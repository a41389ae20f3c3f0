#!/usr/bin/env python3
"""Measures on this machine the costs bench/launch_sim.py is built from, and writes them as JSON.

  * TLS handshake CPU, client and server, with dsrun's own certificates (`dsrun --make_tls`,
    `--make_node_cert`: ECDSA P-256, mutual authentication): `openssl s_server -Verify 1` and
    `openssl s_time -new` (the OpenSSL library dsrun links), CPU of each side from /proc and wait4,
    divided by the number of handshakes s_time reports.
  * Per-rank and per-node costs of the real programs in the smallest multi-node jobs (dsrun runs a
    one-host job locally, without an agent): dsrun-agents on 127.22.0.1-4, `dsrun --no_mesh_probe` with
    2 hosts x 1 rank, 2 x 8 and 4 x 1 of /bin/true, --reps each (alternating halves). The 16..1,000-node
    runs of bench/agent_scale.py are not used, so they can validate the simulator. dsrun's CPU per run
    (wait4); the agents' own CPU and their ranks' (reaped children) over each phase from /proc/PID/stat
    (10 ms ticks, hence per phase, not per run). 2x8 - 2x1: per-rank costs (agent: spawn + reap + two
    events; dsrun: its share of the launch request + two events); 4x1 - 2x1: dsrun's per-node cost
    (handshake included); what is left of 2x1: dsrun's start-up.
  * Loopback one-way latency: half the round trip of a 1-byte TCP ping-pong in Python (an upper bound).
  bench/launch_sim_calibrate.py [--build build] [--reps 10] [--out bench/launch_sim_costs.json]
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_scale import proc_stat as cpu_us  # noqa: E402  (own CPU, reaped children's CPU) in µs


def free_port(host):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def handshake_costs(tls, node, seconds):
    port = free_port("127.22.0.1")
    server = subprocess.Popen(["openssl", "s_server", "-accept", f"127.22.0.1:{port}", "-cert", f"{node}/cert.pem",
                               "-key", f"{node}/key.pem", "-CAfile", f"{tls}/ca.pem", "-Verify", "1", "-quiet",
                               "-naccept", "1000000"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        s0 = cpu_us(server.pid)[0]
        client = subprocess.Popen(["openssl", "s_time", "-connect", f"127.22.0.1:{port}", "-new", "-time",
                                   str(seconds), "-cert", f"{tls}/cert.pem", "-key", f"{tls}/key.pem", "-CAfile",
                                   f"{tls}/ca.pem", "-verify", "1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True)
        _, status, usage = os.wait4(client.pid, 0)
        out = client.stdout.read()
        s1 = cpu_us(server.pid)[0]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()
    m = re.search(r"(\d+) connections in ([\d.]+)s", out)
    if not m or int(m.group(1)) == 0:
        raise SystemExit(f"launch_sim_calibrate.py: openssl s_time made no connection:\n{out}")
    n = int(m.group(1))
    return {"handshakes": n, "client_us": (usage.ru_utime + usage.ru_stime) * 1e6 / n, "server_us": (s1 - s0) / n}


def small_job_costs(args, work, tls):
    """Per configuration (hosts, ranks per host): dsrun's CPU per run (wait4), the agents' own CPU and their
    ranks' CPU per run (the agents' /proc/PID/stat over the whole phase: it counts in 10 ms ticks)."""
    hosts = [f"127.22.0.{i + 1}" for i in range(4)]
    port = free_port(hosts[0])
    agents = []
    for h in hosts:
        subprocess.run([args.dsrun, "--make_node_cert", tls, "--host", h, "--out", f"{work}/node-{h}"], check=True,
                       stdout=subprocess.DEVNULL)
        log = f"{work}/agent-{h}.log"
        with open(log, "w") as out:
            agents.append((subprocess.Popen([args.agent, "--listen", f"{h}:{port}", "--tls_dir", f"{work}/node-{h}"],
                                            stdout=out, stderr=subprocess.STDOUT), log))
    try:
        for _, log in agents:
            for _ in range(100):
                if "listening on" in open(log).read():
                    break
                time.sleep(0.05)
        results = {}
        # Each configuration twice, alternating, so that load changes hit all alike.
        for config in [(2, 1), (2, 8), (4, 1)] * 2:
            count, ranks = config
            with open(f"{work}/hostfile", "w") as f:
                f.writelines(f"{h} slots={ranks}\n" for h in hosts[:count])
            before = [cpu_us(a.pid) for a, _ in agents]
            runs = []
            for _ in range(args.reps // 2):
                t0 = time.time()
                p = subprocess.Popen([args.dsrun, "--launcher", "agent", "--agent_port", str(port), "--tls_dir", tls,
                                      "-H", f"{work}/hostfile", "--master_addr", hosts[0], "--master_port", "0",
                                      "--no_mesh_probe", "--no_python", "--no_local_rank", "/bin/true"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                _, status, usage = os.wait4(p.pid, 0)
                if status != 0:
                    raise SystemExit(f"launch_sim_calibrate.py: dsrun failed: {p.stderr.read().decode()}")
                runs.append({"dsrun_us": (usage.ru_utime + usage.ru_stime) * 1e6, "wall_s": time.time() - t0})
            time.sleep(0.3)  # the agents' last reaps
            after = [cpu_us(a.pid) for a, _ in agents]
            r = results.setdefault(f"{count}x{ranks}", {"dsrun_us": [], "wall_s": [], "agent_us": [], "ranks_us": []})
            r["dsrun_us"] += [x["dsrun_us"] for x in runs]
            r["wall_s"] += [x["wall_s"] for x in runs]
            # Per agent of the job and per run.
            r["agent_us"].append(sum(a[0] - b[0] for a, b in zip(after, before)) / count / len(runs))
            r["ranks_us"].append(sum(a[1] - b[1] for a, b in zip(after, before)) / count / len(runs))
        return results
    finally:
        for a, _ in agents:
            a.send_signal(signal.SIGTERM)
        for a, _ in agents:
            a.wait()


def loopback_latency_us(rounds=2000):
    """Half the mean round trip of a 1-byte TCP ping-pong on 127.22.0.1 (Python at both ends: an upper bound)."""
    server = socket.socket()
    server.bind(("127.22.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname())
    peer, _ = server.accept()
    for s in (client, peer):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t0 = time.perf_counter()
    for _ in range(rounds):
        client.sendall(b"x")
        peer.recv(1)
        peer.sendall(b"y")
        client.recv(1)
    took = time.perf_counter() - t0
    for s in (client, peer, server):
        s.close()
    return took / rounds / 2 * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--tls_seconds", type=int, default=5)
    ap.add_argument("--out", default="bench/launch_sim_costs.json")
    args = ap.parse_args()
    args.dsrun = os.path.realpath(f"{args.build}/launcher/dsrun")
    args.agent = os.path.realpath(f"{args.build}/agent/dsrun-agent")
    for b in (args.dsrun, args.agent):
        if not os.access(b, os.X_OK):
            raise SystemExit(f"launch_sim_calibrate.py: {b} not built")
    if not shutil.which("openssl"):
        raise SystemExit("launch_sim_calibrate.py: 'openssl' not found in PATH (apt-get install openssl)")
    work = tempfile.mkdtemp(prefix="dsrun-sim-cal.")
    try:
        tls = f"{work}/tls"
        subprocess.run([args.dsrun, "--make_tls", tls], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([args.dsrun, "--make_node_cert", tls, "--host", "127.22.0.1", "--out", f"{work}/node"],
                       check=True, stdout=subprocess.DEVNULL)
        load0 = open("/proc/loadavg").read().split()[:3]
        hs = handshake_costs(tls, f"{work}/node", args.tls_seconds)
        samples = small_job_costs(args, work, tls)
        latency = loopback_latency_us()
        load1 = open("/proc/loadavg").read().split()[:3]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # Means, not medians: the ranks' CPU comes in 10 ms ticks.
    mean = {c: {k: statistics.mean(v) for k, v in r.items()} for c, r in samples.items()}
    per_rank = {k: (mean["2x8"][k] - mean["2x1"][k]) / (7 if k != "dsrun_us" else 14)
                for k in ("dsrun_us", "agent_us", "ranks_us")}
    dsrun_per_node = (mean["4x1"]["dsrun_us"] - mean["2x1"]["dsrun_us"]) / 2 - per_rank["dsrun_us"]
    costs = {
        "tls_client_us": hs["client_us"],
        "tls_server_us": hs["server_us"],
        "tls_handshakes_measured": hs["handshakes"],
        "dsrun_per_rank_us": per_rank["dsrun_us"],
        "dsrun_per_node_us": dsrun_per_node,
        "dsrun_startup_us": mean["2x1"]["dsrun_us"] - 2 * (dsrun_per_node + per_rank["dsrun_us"]),
        "agent_per_rank_us": per_rank["agent_us"],
        "agent_per_node_us": mean["2x1"]["agent_us"] - per_rank["agent_us"],
        "rank_exec_us": per_rank["ranks_us"],
        "small_job_wall_s": {c: m["wall_s"] for c, m in mean.items()},
        "loopback_one_way_us": latency,
        "reps": args.reps,
        "load": {"before": load0, "after": load1},
        "raw": samples,
    }
    with open(args.out, "w") as f:
        json.dump(costs, f, indent=1)
    print(json.dumps({k: v for k, v in costs.items() if k != "raw"}, indent=1))


if __name__ == "__main__":
    main()
