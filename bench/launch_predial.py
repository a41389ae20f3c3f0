#!/usr/bin/env python3
"""dsrun's own work before it dials, on the real binary: CPU and wall time from its start to its first dial of
the first host's agent (the rendezvous: MASTER_ADDR and MASTER_PORT) and to its first dial of a root of the
launch, at 1,000 and 10,000 hosts x 8 slots (a tree launch, --tree_width auto), two dsrun binaries side by side.

One dsrun-agent serves the first host (127.NET.0.1, its own node certificate); the other hosts are loopback
addresses nobody listens on: dsrun plans, learns the rendezvous from the one agent, builds its job and dials the
roots, and bench/first_dial_shim.c (LD_PRELOAD, built here with cc) notes the process's CPU time at each dial of the
agents' port and ends dsrun at the root's, before that connect: nothing after it is measured, nothing is started.
Runs alternate between the binaries; the best of --runs is reported (the machine is shared), the median beside it.
Also `dsrun --version` (process start, option parsing, exit): CPU (wait4) and wall, best of --runs.
--costs FILE merges the after binary's per-rank pre-dial CPU into launch_sim_costs.json as "predial" for
bench/launch_sim.py (a fit through the two sizes).
  bench/launch_predial.py --before OLD/dsrun [--after build/launcher/dsrun] [--agent build/agent/dsrun-agent]
                          [--sizes 1000,10000] [--runs 5] [--costs bench/launch_sim_costs.json]
Needs cc, and python3 (stdlib only).
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DIAL = re.compile(r"DIAL_SHIM dial (\d+) cpu_ms ([\d.]+) wall_ms ([\d.]+)")


def address(net, i):
    return f"127.{net}.{i // 250}.{i % 250 + 1}"


def one_run(dsrun, shim, work, hostfile, args):
    """(cpu_ms, wall_ms) at the rendezvous dial and at the first root's dial, from dsrun's start."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "DIAL_SHIM_PORT": str(args.port),
           "DIAL_SHIM_EXIT_AT": "2", "LD_PRELOAD": shim,
           # A few exported variables, as a DeepSpeed job propagates (NCCL_*, PYTHONPATH).
           "NCCL_DEBUG": "WARN", "NCCL_IB_HCA": "mlx5", "PYTHONPATH": "/work/job"}
    cmd = [dsrun, "--launcher", "agent", "--agent_port", str(args.port), "--tls_dir", os.path.join(work, "tls"),
           "-H", hostfile, "--master_addr", address(args.net, 0), "--master_port", "0",
           "train.py", "--deepspeed_config", "ds.json"]
    start = time.time() * 1000
    p = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True, timeout=600)
    dials = {int(m.group(1)): (float(m.group(2)), float(m.group(3)) - start) for m in DIAL.finditer(p.stderr)}
    if 2 not in dials:
        raise SystemExit(f"launch_predial.py: {dsrun} did not reach its first root (exit {p.returncode}):\n"
                         f"{p.stderr[-2000:]}")
    return dials[1], dials[2]


def version_run(dsrun):
    """(cpu_ms, wall_ms) of `dsrun --version`: its start-up, option parsing and exit."""
    start = time.time()
    proc = subprocess.Popen([dsrun, "--version"], stdout=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    wall = (time.time() - start) * 1000
    proc.returncode = 0
    return (usage.ru_utime + usage.ru_stime) * 1000, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True, help="the dsrun to compare with (e.g. main's build)")
    ap.add_argument("--after", default="build/launcher/dsrun")
    ap.add_argument("--agent", default="build/agent/dsrun-agent")
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--net", type=int, default=32, help="second octet of the hosts' loopback addresses")
    ap.add_argument("--port", type=int, default=29732)
    ap.add_argument("--costs", help="merge the after binary's pre-dial cost per rank into this JSON file")
    args = ap.parse_args()
    binaries = {"before": os.path.realpath(args.before), "after": os.path.realpath(args.after)}
    for b in list(binaries.values()) + [args.agent]:
        if not os.access(b, os.X_OK):
            raise SystemExit(f"launch_predial.py: {b} not found or not executable")
    if shutil.which("cc") is None:
        raise SystemExit("launch_predial.py: needs a C compiler (cc) for bench/first_dial_shim.c")
    sizes = [int(s) for s in args.sizes.split(",")]
    work = tempfile.mkdtemp(prefix="dsrun-predial.")
    agent = None
    try:
        shim = os.path.join(work, "first_dial_shim.so")
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", shim, os.path.join(HERE, "first_dial_shim.c"), "-ldl"],
                       check=True)
        dsrun = binaries["after"]
        subprocess.run([dsrun, "--make_tls", os.path.join(work, "tls")], check=True, stdout=subprocess.DEVNULL)
        first = address(args.net, 0)
        subprocess.run([dsrun, "--make_node_cert", os.path.join(work, "tls"), "--host", first, "--out",
                        os.path.join(work, "node0")], check=True, stdout=subprocess.DEVNULL)
        agent = subprocess.Popen([os.path.realpath(args.agent), "--listen", f"{first}:{args.port}", "--tls_dir",
                                  os.path.join(work, "node0")], stdout=subprocess.DEVNULL,
                                 stderr=open(os.path.join(work, "agent.log"), "w"), start_new_session=True)
        time.sleep(0.5)
        if agent.poll() is not None:
            raise SystemExit(f"launch_predial.py: the agent exited: {open(os.path.join(work, 'agent.log')).read()}")
        results = {}
        for n in sizes:
            hostfile = os.path.join(work, f"hosts{n}")
            with open(hostfile, "w") as f:
                for i in range(n):
                    f.write(f"{address(args.net, i)} slots={args.ranks}\n")
            for _ in range(args.runs):
                for name, b in binaries.items():  # interleaved: both see the same load
                    rdv, root = one_run(b, shim, work, hostfile, args)
                    results.setdefault((name, n), []).append((rdv, root))
        versions = {name: [version_run(b) for _ in range(args.runs)] for name, b in binaries.items()}
    finally:
        if agent is not None:
            os.killpg(agent.pid, signal.SIGTERM)
            agent.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)

    def best(values):
        return min(values), statistics.median(values)

    load = open("/proc/loadavg").read().split()[:3]
    print(f"dsrun before its dials, {args.runs} runs each (best / median), hosts x {args.ranks} slots, "
          f"this machine ({os.cpu_count()} cores, load {' '.join(load)}); ms from dsrun's start\n")
    print("| hosts x slots | dsrun | CPU to the rendezvous dial | CPU to the first root's dial | wall to the first "
          "root's dial |")
    print("|---|---|---:|---:|---:|")
    for n in sizes:
        for name in binaries:
            runs = results[(name, n)]
            c1 = best([r[0][0] for r in runs])
            c2 = best([r[1][0] for r in runs])
            w2 = best([r[1][1] for r in runs])
            print(f"| {n:,} x {args.ranks} | {name} | {c1[0]:,.0f} / {c1[1]:,.0f} | {c2[0]:,.0f} / {c2[1]:,.0f} | "
                  f"{w2[0]:,.0f} / {w2[1]:,.0f} |")
    print("\n| `dsrun --version` | CPU ms | wall ms |\n|---|---:|---:|")
    for name in binaries:
        c = best([v[0] for v in versions[name]])
        w = best([v[1] for v in versions[name]])
        print(f"| {name} | {c[0]:.1f} / {c[1]:.1f} | {w[0]:.1f} / {w[1]:.1f} |")

    if args.costs and len(sizes) >= 2:
        small, large = min(sizes), max(sizes)
        def slope(dial):
            cpu = {n: min(r[dial][0] for r in results[("after", n)]) for n in (small, large)}
            return (cpu[large] - cpu[small]) * 1000 / ((large - small) * args.ranks), cpu
        per_rank, cpu = slope(1)
        predial = {
            # CPU per rank from dsrun's start to its first root's dial, and to the rendezvous dial (the rest of
            # each is the start-up, which launch_sim.py has as dsrun_startup_us).
            "predial_us_per_rank": per_rank,
            "predial_rendezvous_us_per_rank": slope(0)[0],
            "predial_common_us": cpu[small] * 1000 - per_rank * small * args.ranks,
            "predial_cpu_ms": {str(n): cpu[n] for n in (small, large)},
            "version_cpu_ms": min(v[0] for v in versions["after"]),
            "runs": args.runs,
            "load": load,
        }
        with open(args.costs) as f:
            costs = json.load(f)
        costs["predial"] = predial
        with open(args.costs, "w") as f:
            json.dump(costs, f, indent=1)
            f.write("\n")
        print("\n" + json.dumps(predial, indent=1))


if __name__ == "__main__":
    main()
