#!/usr/bin/env python3
"""Today's rendezvous at scale: torch's TCPStore (the c10d store `init_process_group("env://")` creates)
served by one process, with N real torch TCPStore clients doing what `init_process_group` and NCCL's
unique-id exchange do, for N = 64, 256, 1,024 and 4,096 on this machine.

What each rank does (read from torch's c10d code; the wire ops were checked with strace on torch 2.15,
docs/rendezvous.md "What a rank asks of the store" lists them):
  * the TCPStore client constructor: a TCP connect, VALIDATE (one way), PING (1 round trip);
  * waitForWorkers: ADD "init/" +1 (1 round trip); the master's rank (rank 0) then polls GET "init/"
    every 10 ms (WAIT + GET, 2 round trips each) until it reads N, as TCPStore's constructor does;
  * ProcessGroupNCCL's unique-id broadcast: rank 0 SETs the process group's key (128 bytes, one way),
    every other rank GETs it (WAIT, which blocks until the key is set, + GET: 2 round trips);
  * --barrier (TORCH_DIST_INIT_BARRIER=1 in torch 2.x, always in torch 1.13): the store-based barrier
    after the process group is made. 2.x: ADD +1, ADD 0, the last arrival SETs ":last_worker", everyone
    WAITs on it; 1.13: ADD +1, then ADD 0 every 10 ms until it reads N.
The keys differ from torch's only in their text (the Python API prefixes "/"); the ops and their count
are torch's. The server is a process of its own (TCPStore(is_master=True), libuv or the classic
backend), so its CPU is the store's alone; the ranks are threads (store calls release the GIL) in
--procs client processes, released together at one instant.

Measured per run: time from the release to all ranks rendezvoused (every rank holds the unique id and
rank 0 has seen N arrivals), the server process's CPU (schedstat, every thread) over that run, and each
rank's round trips (counted per call from the table above) and connect time.
  bench/rendezvous_scale.py [--sizes 64,256,1024,4096] [--runs 3] [--backends libuv,classic]
                            [--python .venv-torch2/bin/python] [--barrier] [--json FILE]
Needs a python with torch (--python); this script itself needs only the standard library.
"""
import argparse
import json
import os
import random
import shlex
import statistics
import subprocess
import sys
import threading
import time

# Round trips per store call, as seen on the wire (strace of a torch 2.15 client): SET has no reply;
# GET is WAIT (blocks until the key exists) then GET.
ROUND_TRIPS = {"connect": 1, "add": 1, "get": 2, "set": 0, "wait": 1}

SERVER = r"""
import datetime, os, sys, time
import torch.distributed as dist
port, libuv, world = int(sys.argv[1]), sys.argv[2] == "1", int(sys.argv[3])
def serve(**kw):
    return dist.TCPStore("127.0.0.1", port, world, True, datetime.timedelta(seconds=600), wait_for_workers=False, **kw)
try:
    store = serve(use_libuv=libuv)
except TypeError:  # torch 1.13: one (classic) backend, no use_libuv
    if libuv:
        sys.exit("this torch's TCPStore has no libuv backend")
    store = serve()
def cpu_us():
    return sum(int(open(f"/proc/self/task/{t}/schedstat").read().split()[0])
               for t in os.listdir("/proc/self/task")) / 1000
print("listening", store.port, flush=True)
for line in sys.stdin:  # "cpu" -> the process's CPU so far; EOF -> exit
    print(f"cpu {cpu_us():.0f}", flush=True)
"""

CLIENT = r"""
import datetime, json, sys, threading, time
import torch.distributed as dist
port, world, first, count, barrier, old = (int(x) for x in sys.argv[1:7])
T = datetime.timedelta(seconds=600)
go = threading.Event()
out = [None] * count

def rank_main(slot):
    rank = first + slot
    go.wait()
    rt = {"connect": 0, "add": 0, "get": 0, "set": 0, "wait": 0}
    t0 = time.time()
    store = dist.TCPStore("127.0.0.1", port, world, False, T, wait_for_workers=False)
    rt["connect"] += 1
    t_conn = time.time() - t0
    store.add("init/", 1); rt["add"] += 1            # waitForWorkers
    if rank == 0:                                     # the master's poll, every 10 ms
        while True:
            rt["get"] += 1
            if int(store.get("init/")) >= world:
                break
            time.sleep(0.01)
    pg = dist.PrefixStore("0", store)                 # the default process group's store
    if rank == 0:
        pg.set("0", b"u" * 128); rt["set"] += 1       # ProcessGroupNCCL: ncclCommCounter_ 0
    else:
        pg.get("0"); rt["get"] += 1
    if barrier:
        key = "store_based_barrier_key:0"
        pg.add(key, 1); rt["add"] += 1
        if old:                                       # torch 1.13: poll ADD 0 every 10 ms
            while True:
                rt["add"] += 1
                if pg.add(key, 0) >= world:
                    break
                time.sleep(0.01)
        else:                                         # torch 2.x: last arrival sets, all wait
            rt["add"] += 1
            if pg.add(key, 0) == world:
                pg.set(key + ":last_worker", b"1"); rt["set"] += 1
            pg.wait([key + ":last_worker"]); rt["wait"] += 1
    out[slot] = {"rank": rank, "done": time.time(), "connect_s": t_conn, "ops": rt}
    store_keep.append(store)                          # closed at exit, after every rank is done

store_keep = []
threads = [threading.Thread(target=rank_main, args=(i,), daemon=True) for i in range(count)]
for t in threads:
    t.start()
print("ready", flush=True)
start_at = float(sys.stdin.readline())
time.sleep(max(0.0, start_at - time.time()))
go.set()
for t in threads:
    t.join()
print(json.dumps(out), flush=True)
"""


def round_trips(ops):
    return sum(ROUND_TRIPS[k] * v for k, v in ops.items())


def run_once(args, world, libuv):
    port = 29300 + random.randrange(400)
    server = subprocess.Popen([args.python, "-c", SERVER, str(port), "1" if libuv else "0", str(world)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    if not line.startswith("listening"):
        server.kill()
        raise SystemExit(f"rendezvous_scale.py: the store server did not start ({args.python}): {line!r}")
    procs = min(args.procs, world)
    per = [world // procs + (1 if i < world % procs else 0) for i in range(procs)]
    clients, first = [], 0
    for n in per:
        clients.append(subprocess.Popen([args.python, "-c", CLIENT, str(port), str(world), str(first), str(n),
                                         "1" if args.barrier else "0", "1" if args.old_barrier else "0"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        first += n
    def give_up():  # a run that hangs (a lost wake-up, a wedged client) ends the bench, loudly
        for proc in clients + [server]:
            proc.kill()
    watchdog = threading.Timer(args.run_timeout, give_up)
    watchdog.start()
    try:
        for c in clients:
            if c.stdout.readline().strip() != "ready":
                raise SystemExit(f"rendezvous_scale.py: a client process did not start (or --run_timeout {args.run_timeout} s passed)")
        server.stdin.write("cpu\n")
        server.stdin.flush()
        cpu0 = float(server.stdout.readline().split()[1])
        start = time.time() + 0.5
        for c in clients:
            c.stdin.write(f"{start}\n")
            c.stdin.flush()
        ranks = []
        for c in clients:
            ranks += json.loads(c.stdout.readline())
        server.stdin.write("cpu\n")
        server.stdin.flush()
        cpu1 = float(server.stdout.readline().split()[1])
    except (ValueError, IndexError, json.JSONDecodeError) as e:
        raise SystemExit(f"rendezvous_scale.py: {world} ranks: the run did not finish within {args.run_timeout} s "
                         f"or a process died ({e})")
    finally:
        watchdog.cancel()
        for c in clients:
            c.stdin.close() if not c.stdin.closed else None
            c.wait(timeout=120)
        server.stdin.close()
        server.wait(timeout=60)
    rts = [round_trips(r["ops"]) for r in ranks]
    return {
        "world": world, "libuv": libuv, "procs": procs,
        "all_rendezvoused_s": max(r["done"] for r in ranks) - start,
        "server_cpu_us": cpu1 - cpu0,
        "round_trips_per_rank_median": statistics.median(rts),
        "round_trips_rank0": next(round_trips(r["ops"]) for r in ranks if r["rank"] == 0),
        "round_trips_total": sum(rts),
        "connect_ms_median": statistics.median(r["connect_s"] for r in ranks) * 1e3,
        "connect_ms_max": max(r["connect_s"] for r in ranks) * 1e3,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="64,256,1024,4096")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--backends", default="libuv,classic")
    ap.add_argument("--python", default=sys.executable, help="a python with torch")
    ap.add_argument("--procs", type=int, default=8, help="client processes the ranks (threads) are spread over")
    ap.add_argument("--barrier", action="store_true", help="add the store-based barrier after the process group")
    ap.add_argument("--old_barrier", action="store_true", help="the barrier as torch 1.13 does it (poll ADD 0)")
    ap.add_argument("--json", default="")
    ap.add_argument("--run_timeout", type=int, default=600, help="seconds one run may take before the bench gives up")
    ap.add_argument("--no_netns", action="store_true", help="stay in this network namespace (see below)")
    args = ap.parse_args()
    if not args.no_netns and os.environ.get("RENDEZVOUS_SCALE_NETNS") != "1":
        # torch's client looks the store's address up in reverse DNS (PTR) before it connects; this
        # machine's sandboxed resolver drops concurrent queries, and each drop costs a 5 s resolver retry,
        # which would be all we measured. In a private network namespace (loopback only) the lookup fails
        # at once, as it answers at once where reverse DNS works.
        env = dict(os.environ, RENDEZVOUS_SCALE_NETNS="1")
        inner = " ".join(shlex.quote(a) for a in [sys.executable, os.path.abspath(__file__)] + sys.argv[1:])
        os.execvpe("unshare", ["unshare", "-rn", "sh", "-c", f"ip link set lo up && exec {inner}"], env)
    version = subprocess.run([args.python, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                             text=True)
    if version.returncode != 0:
        raise SystemExit(f"rendezvous_scale.py: {args.python} cannot import torch: {version.stderr.strip()[-300:]}")
    results = {"torch": version.stdout.strip(), "python": args.python, "load_before": open("/proc/loadavg").read().split()[:3],
               "barrier": args.barrier, "old_barrier": args.old_barrier, "runs": []}
    for world in [int(s) for s in args.sizes.split(",")]:
        for r in range(args.runs):
            for backend in args.backends.split(","):
                res = run_once(args, world, backend == "libuv")
                res["load"] = open("/proc/loadavg").read().split()[0]
                results["runs"].append(res)
                print(f"[{world} {backend} run {r}] {json.dumps(res)}", file=sys.stderr, flush=True)
    results["load_after"] = open("/proc/loadavg").read().split()[:3]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print(f"\ntorch {results['torch']}; barrier: {'1.13 poll' if args.old_barrier else args.barrier}; "
          f"load {' '.join(results['load_before'])} -> {' '.join(results['load_after'])}")
    print("| ranks | store | all rendezvoused | server CPU | server CPU / rank | round trips / rank (rank 0) "
          "| connect median / max |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for world in [int(s) for s in args.sizes.split(",")]:
        for backend in args.backends.split(","):
            rs = [x for x in results["runs"] if x["world"] == world and x["libuv"] == (backend == "libuv")]
            if not rs:
                continue
            m = lambda k: statistics.median(x[k] for x in rs)  # noqa: E731
            print(f"| {world:,} | {backend} | {m('all_rendezvoused_s') * 1e3:,.0f} ms | {m('server_cpu_us') / 1e3:,.1f} ms "
                  f"| {m('server_cpu_us') / world:,.1f} µs | {m('round_trips_per_rank_median'):.0f} "
                  f"({m('round_trips_rank0'):.0f}) | {m('connect_ms_median'):.1f} / {m('connect_ms_max'):,.0f} ms |")


if __name__ == "__main__":
    main()
