#!/usr/bin/env python3
"""Rendezvous through the agents (dsrun --rendezvous agent, docs/rendezvous.md) at the sizes this machine holds:
the clients of bench/rendezvous_scale.py (real torch TCPStore clients doing what init_process_group("env://")
and NCCL's unique-id exchange do, threads in a few processes) against their own node's agent store, with K real
dsrun-agents on loopback addresses, through the star and agent trees; rendezvous_scale.py measures the same
clients against one torch TCPStore, in the same run (--compare).

Each of the K agents gets one "rank" from dsrun: a process that runs N / K store clients as threads, all on its
own agent's store endpoint (MASTER_ADDR:MASTER_PORT as the agent set them); rank r's threads are global ranks
r*N/K ... The threads start together (a file the bench writes once every process is ready), so what is timed is
the store exchange, not dsrun's launch or torch's import. Per run: from the release to the last rank done, and
the agents' CPU (every agent's /proc/PID/task/*/schedstat) over that window, summed and at the busiest agent
(the root: rank 0's node). The ranks write their results to files and print one line, so the window holds the
agents' store work (and their heartbeats), not the relaying of output.
  bench/rendezvous_agents.py [--agents 4] [--sizes 64,256,1024] [--runs 3] [--tree_widths 0,2]
                             [--python .venv-torch2/bin/python] [--build build] [--compare] [--json FILE]
Runs in a private network namespace, as rendezvous_scale.py does (torch's client looks its store up in reverse
DNS; this machine's resolver drops concurrent queries). Needs the built dsrun and dsrun-agent and a python with
torch.
"""
import argparse
import json
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import agent_scale  # noqa: E402  (Cluster, proc_stat: the agents on loopback addresses)
import rendezvous_scale  # noqa: E402  (CLIENT: the rank's store calls, and its round-trip table)

# rendezvous_scale.py's client, fed by dsrun instead of a pipe: the store is this node's agent (MASTER_PORT), the
# release time comes from a file once every process printed "ready".
CLIENT = rendezvous_scale.CLIENT.replace(
    'port, world, first, count, barrier, old = (int(x) for x in sys.argv[1:7])',
    'import os\n'
    'world, per, barrier, old = (int(x) for x in sys.argv[1:5])\n'
    'go_file = sys.argv[5]\n'
    'port = int(os.environ["MASTER_PORT"])\n'
    'first, count = int(os.environ["RANK"]) * per, per',
).replace(
    'print(json.dumps(out), flush=True)',
    # To a file, not through dsrun: the agents' CPU over the window is then the store's, not output relaying.
    'open(go_file + ".rank%d" % int(os.environ["RANK"]), "w").write(json.dumps(out))\n'
    'print("done", flush=True)',
).replace(
    'start_at = float(sys.stdin.readline())',
    'while not os.path.exists(go_file):\n'
    '    time.sleep(0.005)\n'
    'time.sleep(0.05)\n'
    'start_at = float(open(go_file).read())',
)
assert "go_file" in CLIENT and "MASTER_PORT" in CLIENT and '"done"' in CLIENT, \
    "rendezvous_scale.CLIENT changed: update the replacements"


def cpu_us(cluster):
    return [agent_scale.proc_stat(p.pid)[0] for p in cluster.procs]


def run_once(args, cluster, hostfile, work, world, width):
    per = world // args.agents
    script = os.path.join(work, "client.py")
    go = os.path.join(work, f"go-{random.randrange(1 << 30)}")
    job = f"rdzv-{world}-{width}-{random.randrange(1 << 20)}"
    cmd = [args.dsrun, "--launcher", "agent", "--agent_port", str(cluster.port), "--tls_dir",
           os.path.join(work, "tls"), "-H", hostfile, "--master_addr", cluster.addrs[0], "--rendezvous", "agent",
           "--no_mesh_probe", "--no_local_rank", "--agent_heartbeat_ms", "2000", "--python", args.python,
           "--tree_width", str(width), script, str(world), str(per), "1" if args.barrier else "0",
           "1" if args.old_barrier else "0", go]
    # dsrun's stderr to a file: a pipe nobody reads until the end fills up and blocks dsrun (its warnings under load).
    err_path = os.path.join(work, "dsrun.err")
    err = open(err_path, "w")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=dict(os.environ, DSRUN_JOB_ID=job))
    timer = threading.Timer(args.run_timeout, proc.kill)
    timer.start()
    ready, done, ranks, cpu0, start = 0, 0, [], None, None
    try:
        for line in proc.stdout:
            body = line.split("| ", 1)[-1].strip()
            if body == "ready":
                ready += 1
                if ready == args.agents:
                    cpu0 = cpu_us(cluster)
                    start = time.time() + 0.3
                    with open(go + ".tmp", "w") as f:
                        f.write(f"{start}\n")
                    os.rename(go + ".tmp", go)
            elif body == "done":
                done += 1
                if done == args.agents:
                    cpu1 = cpu_us(cluster)
                    for r in range(args.agents):
                        with open(f"{go}.rank{r}") as f:
                            ranks += json.load(f)
        rc = proc.wait()
    finally:
        timer.cancel()
        err.close()
    if rc != 0 or len(ranks) != world or cpu0 is None:
        raise SystemExit(f"rendezvous_agents.py: {world} ranks, width {width}: dsrun exited {rc} with "
                         f"{len(ranks)} of {world} ranks done:\n{open(err_path).read()[-3000:]}")
    used = [b - a for a, b in zip(cpu0, cpu1)]
    rts = [rendezvous_scale.round_trips(r["ops"]) for r in ranks]
    return {"world": world, "agents": args.agents, "tree_width": width,
            "all_rendezvoused_s": max(r["done"] for r in ranks) - start,
            "agents_cpu_us": sum(used), "root_agent_cpu_us": used[0], "busiest_agent_cpu_us": max(used),
            "round_trips_per_rank_median": statistics.median(rts),
            "connect_ms_median": statistics.median(r["connect_s"] for r in ranks) * 1e3}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--sizes", default="64,256,1024")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tree_widths", default="0,2", help="0: the star")
    ap.add_argument("--python", default=sys.executable, help="a python with torch")
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--barrier", action="store_true")
    ap.add_argument("--old_barrier", action="store_true")
    ap.add_argument("--compare", action="store_true", help="also rendezvous_scale.py's one TCPStore (libuv)")
    ap.add_argument("--run_timeout", type=int, default=300)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    if os.environ.get("RENDEZVOUS_SCALE_NETNS") != "1":
        env = dict(os.environ, RENDEZVOUS_SCALE_NETNS="1")
        inner = " ".join(shlex.quote(a) for a in [sys.executable, os.path.abspath(__file__)] + sys.argv[1:])
        os.execvpe("unshare", ["unshare", "-rn", "sh", "-c", f"ip link set lo up && exec {inner}"], env)
    args.dsrun = os.path.abspath(os.path.join(args.build, "launcher", "dsrun"))
    args.agent = os.path.abspath(os.path.join(args.build, "agent", "dsrun-agent"))
    work = tempfile.mkdtemp(prefix="rdzv-agents-")
    os.chmod(work, 0o755)
    subprocess.run([args.dsrun, "--make_tls", os.path.join(work, "tls")], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(work, "client.py"), "w") as f:
        f.write(CLIENT)
    cluster = agent_scale.Cluster(args, work, args.agents, 29000 + random.randrange(500))
    hostfile = os.path.join(work, "hostfile")
    with open(hostfile, "w") as f:
        f.writelines(f"{a} slots=1\n" for a in cluster.addrs)
    results = {"load_before": open("/proc/loadavg").read().split()[:3], "runs": [], "tcpstore": None}
    cluster.start()
    try:
        for world in [int(s) for s in args.sizes.split(",")]:
            for r in range(args.runs):
                for width in [int(w) for w in args.tree_widths.split(",")]:
                    res = run_once(args, cluster, hostfile, work, world, width)
                    results["runs"].append(res)
                    print(f"[{world} width {width} run {r}] {json.dumps(res)}", file=sys.stderr, flush=True)
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)
    if args.compare:
        out = tempfile.mktemp(prefix="rdzv-tcpstore-", suffix=".json")
        subprocess.run([sys.executable, os.path.join(HERE, "rendezvous_scale.py"), "--sizes", args.sizes, "--runs",
                        str(args.runs), "--backends", "libuv", "--python", args.python, "--no_netns", "--json", out]
                       + (["--barrier"] if args.barrier else []) + (["--old_barrier"] if args.old_barrier else []),
                       check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            results["tcpstore"] = json.load(f)
        os.unlink(out)
    results["load_after"] = open("/proc/loadavg").read().split()[:3]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print(f"\n{args.agents} agents; load {' '.join(results['load_before'])} -> {' '.join(results['load_after'])}")
    print("| ranks | store | all rendezvoused | store CPU, all | at the busiest process | per rank, busiest | round trips / rank |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for world in [int(s) for s in args.sizes.split(",")]:
        for width in [int(w) for w in args.tree_widths.split(",")]:
            rs = [x for x in results["runs"] if x["world"] == world and x["tree_width"] == width]
            m = lambda k: statistics.median(x[k] for x in rs)  # noqa: E731
            name = "agents, star" if width == 0 else f"agents, tree width {width}"
            print(f"| {world:,} | {name} | {m('all_rendezvoused_s') * 1e3:,.0f} ms | {m('agents_cpu_us') / 1e3:,.1f} ms "
                  f"| {m('busiest_agent_cpu_us') / 1e3:,.1f} ms | {m('busiest_agent_cpu_us') / world:,.1f} µs "
                  f"| {m('round_trips_per_rank_median'):.0f} |")
        if results["tcpstore"]:
            rs = [x for x in results["tcpstore"]["runs"] if x["world"] == world]
            m = lambda k: statistics.median(x[k] for x in rs)  # noqa: E731
            print(f"| {world:,} | one TCPStore (libuv) | {m('all_rendezvoused_s') * 1e3:,.0f} ms | "
                  f"{m('server_cpu_us') / 1e3:,.1f} ms | {m('server_cpu_us') / 1e3:,.1f} ms | "
                  f"{m('server_cpu_us') / world:,.1f} µs | {m('round_trips_per_rank_median'):.0f} |")


if __name__ == "__main__":
    main()
