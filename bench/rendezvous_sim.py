#!/usr/bin/env python3
"""A discrete-event simulation of the ranks' rendezvous (what `init_process_group("env://")` and NCCL's
unique-id exchange ask of the store): today's star, one TCPStore facing every rank, beside the tree of
agents that docs/rendezvous.md designs (NOT built). Event loops and costs as in bench/launch_sim.py;
the store's CPU per operation comes from bench/rendezvous_scale.py's measurements (--real RESULTS.json).

Every rank does what rendezvous_scale.py's ranks do (torch 2.15, no init barrier): connect + PING,
ADD "init/" 1, then rank 0 polls GET "init/" every 10 ms until it reads N and SETs the unique id, which
every other rank GETs (WAIT until it is set, then GET).
  * star: one store loop; every request costs it `op_us`, every connection `accept_us` (fitted to the
    measured server CPU), and one loopback latency each way.
  * tree: every node's agent is the store of its own ranks (same op_us, same latency); the agents of a
    k-ary tree (node 0 the root, rank 0 on it) combine: an ADD goes up as one batch per edge at a time
    (what arrives while a batch is in flight rides in the next one), the root applies the sum and each
    agent splits the result among the adds it carried; a GET that misses an agent's view goes up once per
    key and edge, waits at the first agent that holds the key (the root, where every SET goes), and the
    answer comes down and is cached by every agent on the way. Each message costs its sender and its
    receiver `msg_us` of loop time (launch_sim_costs.json's small message) plus latency and bytes.
  * project: `--cluster` gives every process its own core (a cluster); validate: the store competes with
    the bench's clients for this machine's 2 cores (--cores).
usage: bench/rendezvous_sim.py --real rendezvous.json [--nodes 8000,10000] [--widths 8,16,32,64] [--runs 20]
       bench/rendezvous_sim.py --op_us 22.5 --validate_agents   (the tree model against the real agents' store)
Python 3 standard library only.
"""
import argparse
import json
import os
import random
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from launch_sim import Loop, Sim, pct  # noqa: E402  (the same event loop and core model)


class Rendezvous:
    def __init__(self, costs, nodes, ranks, width, rng, cores=None, jitter=True):
        self.c, self.nodes, self.ranks, self.width = costs, nodes, ranks, width
        self.world = nodes * ranks
        self.sim = Sim(rng, jitter, cores)
        self.lat = costs["latency_us"]
        self.done = 0
        self.finish = None

    # the rank program ------------------------------------------------------------------------------------
    def rank(self, r, store, node):
        """store(node, op, key, value, reply) is the rank's store; reply(value) resumes the program."""
        def after_connect(_):
            store(node, "add", "init/", 1, after_add)

        def after_add(_):
            if r == 0:
                poll(None)
            else:
                store(node, "get", "uid", None, got_uid)

        def poll(_):
            def check(v):
                if v is not None and v >= self.world:
                    store(node, "set", "uid", "u" * 128, got_uid)
                else:
                    self.sim.at(self.sim.now + 10_000, lambda: poll(None))
            store(node, "peek", "init/", None, check)  # WAIT + GET of a key that exists: answered at once

        def got_uid(_):
            self.done += 1
            if self.done == self.world:
                self.finish = self.sim.now

        store(node, "connect", None, None, after_connect)

    def run(self):
        raise NotImplementedError


class Star(Rendezvous):
    """One TCPStore: every rank's every request on one loop."""

    def run(self):
        self.server = Loop(self.sim, "store")
        self.kv, self.waiting = {}, {}
        for r in range(self.world):
            self.sim.at(0.0, lambda r=r: self.rank(r, self.store, 0))
        self.sim.run()
        return self.finish, self.server.cpu_us

    def store(self, _node, op, key, value, reply):
        c, lat = self.c, self.lat
        back = lambda v: self.sim.at(self.sim.now + lat, lambda: reply(v))  # noqa: E731
        if op == "connect":  # accept + VALIDATE + PING
            self.sim.at(self.sim.now + lat, lambda: self.server.post(c["accept_us"] + c["op_us"], lambda: back(None)))
        elif op == "add":
            def do():
                self.kv[key] = self.kv.get(key, 0) + value
                back(self.kv[key])
            self.sim.at(self.sim.now + lat, lambda: self.server.post(c["op_us"], do))
        elif op == "peek":  # WAIT (the key exists) then GET: two requests
            self.sim.at(self.sim.now + lat, lambda: self.server.post(2 * c["op_us"], lambda: back(self.kv.get(key))))
        elif op == "set":  # one way; wakes the waiters
            def do():
                self.kv[key] = value
                for w in self.waiting.pop(key, []):
                    w()
                back(None)
            self.sim.at(self.sim.now + lat, lambda: self.server.post(c["op_us"], do))
        elif op == "get":  # WAIT (parked until set) then GET
            def answer():
                self.sim.at(self.sim.now + lat, lambda: self.server.post(c["op_us"], lambda: back(self.kv[key])))

            def wait():
                if key in self.kv:
                    back_after_wait()
                else:
                    self.waiting.setdefault(key, []).append(back_after_wait)

            def back_after_wait():
                self.sim.at(self.sim.now + lat, answer)  # STOP_WAITING travels back, then the GET comes
            self.sim.at(self.sim.now + lat, lambda: self.server.post(c["op_us"], wait))


class Tree(Rendezvous):
    """Each node's agent is its ranks' store; the agents combine ADDs and relay GETs/SETs (docstring)."""

    parents = None  # set: the store tree of real agents (validate_agents), else a heap-ordered k-ary tree

    def parent(self, i):
        if self.parents is not None:
            return self.parents[i]
        return None if i == 0 else (i - 1) // self.width

    def run(self):
        self.agents = [Loop(self.sim, i) for i in range(self.nodes)]
        self.view = [dict() for _ in range(self.nodes)]       # keys an agent holds
        self.wait = [dict() for _ in range(self.nodes)]       # key -> callbacks waiting for it there
        self.asked = [set() for _ in range(self.nodes)]       # keys an agent has asked its parent for
        self.batch = [dict() for _ in range(self.nodes)]      # key -> [(delta, reply)] not yet sent up
        self.inflight = [set() for _ in range(self.nodes)]    # keys with a batch on the way up
        for r in range(self.world):
            self.sim.at(0.0, lambda r=r: self.rank(r, self.store, r // self.ranks))
        self.sim.run()
        self.total_cpu_us = sum(a.cpu_us for a in self.agents)
        return self.finish, max(a.cpu_us for a in self.agents)

    def message(self, frm, to, nbytes, fn):
        """frm's loop sends (msg_us), the bytes travel, to's loop receives (msg_us) and runs fn."""
        c = self.c
        self.agents[frm].post(c["msg_us"], lambda: self.sim.at(
            self.sim.now + self.lat + nbytes * 8 / 10e3, lambda: self.agents[to].post(c["msg_us"], fn)))

    def store(self, node, op, key, value, reply):
        c, lat, a = self.c, self.lat, self.agents[node]
        back = lambda v: self.sim.at(self.sim.now + lat, lambda: reply(v))  # noqa: E731
        arrive = lambda us, fn: self.sim.at(self.sim.now + lat, lambda: a.post(us, fn))  # noqa: E731
        if op == "connect":
            arrive(c["accept_us"] + c["op_us"], lambda: back(None))
        elif op == "add":
            arrive(c["op_us"], lambda: self.add(node, key, value, back))
        elif op == "peek":
            arrive(2 * c["op_us"], lambda: back(self.view[node].get(key)))
        elif op == "set":
            arrive(c["op_us"], lambda: (self.put(node, key, value), back(None)))
        elif op == "get":
            arrive(c["op_us"], lambda: self.lookup(node, key, lambda v: self.sim.at(
                self.sim.now + lat, lambda: arrive(c["op_us"], lambda: back(v)))))

    # combining ADD: one batch per key and edge in flight ----------------------------------------------------
    def add(self, node, key, delta, reply):
        if node == 0:
            v = self.view[0].get(key, 0) + delta
            self.view[0][key] = v
            reply(v)
            return
        self.batch[node].setdefault(key, []).append((delta, reply))
        self.flush(node, key)

    def flush(self, node, key):
        if key in self.inflight[node] or not self.batch[node].get(key):
            return
        items = self.batch[node].pop(key)
        self.inflight[node].add(key)
        total = sum(d for d, _ in items)
        up = self.parent(node)

        def at_parent():
            def result(v):  # v: the counter after the whole batch; split it back in order
                def down():
                    self.inflight[node].discard(key)
                    base = v - total
                    for d, rep in items:
                        base += d
                        rep(base)
                    self.view[node][key] = v  # the latest value this agent has seen
                    self.flush(node, key)
                self.message(up, node, 64, down)
            self.add(up, key, total, result)
        self.message(node, up, 64, at_parent)

    # SET goes to the root; GET waits where the key will appear and is cached on the way down --------------
    def put(self, node, key, value):
        self.view[node][key] = value
        for w in self.wait[node].pop(key, []):
            w(value)
        up = self.parent(node)
        if up is not None:
            self.message(node, up, 64 + len(value), lambda: self.put(up, key, value))

    def lookup(self, node, key, reply):
        if key in self.view[node]:
            reply(self.view[node][key])
            return
        self.wait[node].setdefault(key, []).append(reply)
        up = self.parent(node)
        if up is None or key in self.asked[node]:
            return  # the root waits for the SET; a request is already on its way up
        self.asked[node].add(key)

        def at_parent():
            self.lookup(up, key, lambda v: self.message(up, node, 64 + len(v), lambda: self.cached(node, key, v)))
        self.message(node, up, 64, at_parent)

    def cached(self, node, key, value):
        self.view[node][key] = value
        for w in self.wait[node].pop(key, []):
            w(value)


def fit_costs(real, launch_costs):
    """op_us and accept_us from the measured server CPU: cpu = world * (accept + ops_per_rank * op)."""
    runs = [r for r in real["runs"] if r["libuv"]] or real["runs"]
    # Least squares over the runs of cpu / world = accept_us + rt_per_rank * op_us, with the requests
    # per rank counted as rendezvous_scale.py counts them (round trips + the one-way VALIDATE/SET).
    xs = [r["round_trips_total"] / r["world"] + 1 for r in runs]
    ys = [r["server_cpu_us"] / r["world"] for r in runs]
    # Two unknowns, nearly collinear (every rank makes ~5 requests): take accept as one request.
    op = statistics.median(y / (x + 1) for x, y in zip(xs, ys))
    return {"op_us": op, "accept_us": op, "msg_us": launch_costs["dsrun_per_rank_us"] / 3,
            "latency_us": launch_costs["loopback_one_way_us"], "fitted_from": len(runs)}


# bench/rendezvous_agents.py --agents 8 --sizes 64,256,1024 --runs 2 --tree_widths 0,2 (docs/benchmarks.md
# "Built: the agents' store, measured"), torch 2.15: per size and shape, the two tables' medians (the run with
# the ranks' result lines relayed, and the one without) of the busiest agent's store CPU and of all agents', ms.
AGENTS_MEASURED = {
    (64, 0): ([3.9, 4.0], [17.9, 19.7]), (64, 2): ([3.7, 4.1], [20.5, 21.2]),
    (256, 0): ([12.4, 12.8], [54.2, 55.8]), (256, 2): ([8.4, 9.2], [51.7, 51.4]),
    (1024, 0): ([30.8, 22.2], [166, 124]), (1024, 2): ([38.2, 28.4], [191, 179]),
}


def agent_store_parents(nodes, width):
    """The store tree of the real agents (docs/rendezvous.md): rank 0's agent (node 0) holds the keys; with the
    star every other agent asks it directly; in a launch tree each agent asks its tree parent and a root
    other than node 0 asks node 0."""
    if width == 0:
        return [None] + [0] * (nodes - 1)
    from launch_sim import plan_tree
    parent, _ = plan_tree(nodes, width)
    return [None if i == 0 else (0 if p < 0 else p) for i, p in enumerate(parent)]


def validate_agents(c, rng, cores):
    """The tree model against the real agents' store (8 agents, N/8 ranks each, on this machine's cores)."""
    print(f"\nvalidation, the agents' store (bench/rendezvous_agents.py, 8 real agents; the model on {cores:g} "
          "shared cores):")
    print("| ranks | shape | measured busiest agent CPU | simulated | error | measured all agents' CPU | simulated "
          "| error |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    errs = []
    for (world, width), (busiest, total) in sorted(AGENTS_MEASURED.items()):
        t = Tree(c, 8, world // 8, max(width, 1), rng, cores=cores, jitter=False)
        t.parents = agent_store_parents(8, width)
        _, sim_busiest = t.run()
        m_b, m_t = statistics.median(busiest), statistics.median(total)
        e_b, e_t = (sim_busiest / 1e3 - m_b) / m_b, (t.total_cpu_us / 1e3 - m_t) / m_t
        errs.append((e_b, e_t))
        shape = "star" if width == 0 else f"tree width {width}"
        print(f"| {world:,} | 8 agents, {shape} | {m_b:.1f} ms | {sim_busiest / 1e3:.1f} ms | {e_b:+.0%} | "
              f"{m_t:.0f} ms | {t.total_cpu_us / 1e3:.0f} ms | {e_t:+.0%} |")
    for k, name in enumerate(("busiest agent", "all agents")):
        xs = [abs(e[k]) for e in errs]
        print(f"{name}: mean |error| {statistics.mean(xs):.0%}, max {max(xs):.0%}, "
              f"{sum(x > 0.2 for x in xs)} of {len(xs)} outside 20 %")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--real", help="bench/rendezvous_scale.py --json output (torch 2.x, libuv)")
    ap.add_argument("--op_us", type=float, default=None,
                    help="without --real: the store's cost per request as fitted before (docs/benchmarks.md: 22.5)")
    ap.add_argument("--validate_agents", action="store_true",
                    help="also check the tree model against the real agents' store (rendezvous_agents.py)")
    ap.add_argument("--cores", type=float, default=2.0, help="validate_agents: the cores the model shares")
    ap.add_argument("--no_projection", action="store_true", help="validate_agents only")
    ap.add_argument("--costs", default=os.path.join(HERE, "launch_sim_costs.json"))
    ap.add_argument("--nodes", default="8,32,128,512,1250,10000")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--widths", default="8,16,32,64")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    launch_costs = json.load(open(args.costs))
    if args.real:
        real = json.load(open(args.real))
        c = fit_costs(real, launch_costs)
        print(f"costs: store op {c['op_us']:.1f} µs (fitted to {c['fitted_from']} runs of torch {real['torch']}), "
              f"accept {c['accept_us']:.1f} µs, message {c['msg_us']:.1f} µs, latency {c['latency_us']:.1f} µs")
    elif args.op_us is not None:
        real = None
        c = {"op_us": args.op_us, "accept_us": args.op_us, "msg_us": launch_costs["dsrun_per_rank_us"] / 3,
             "latency_us": launch_costs["loopback_one_way_us"], "fitted_from": 0}
        print(f"costs: store op {c['op_us']:.1f} µs (given), message {c['msg_us']:.1f} µs, latency "
              f"{c['latency_us']:.1f} µs")
    else:
        ap.error("--real RESULTS.json, or --op_us")
    rng = random.Random(args.seed)
    if args.validate_agents:
        validate_agents(c, rng, args.cores)
    if args.validate_agents and args.no_projection:
        return

    if real is not None:
        print("\nvalidation, the star on this machine's 2 cores (the store shares them with the bench's clients):")
        print("| ranks | measured all rendezvoused | simulated | error | measured store CPU | simulated | error |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        sizes = sorted({r["world"] for r in real["runs"] if r["libuv"]})
        for world in sizes:
            rs = [r for r in real["runs"] if r["libuv"] and r["world"] == world]
            m_t = statistics.median(r["all_rendezvoused_s"] for r in rs) * 1e6
            m_c = statistics.median(r["server_cpu_us"] for r in rs)
            t, cpu = Star(c, 1, world, 0, rng, cores=1.0).run()
            print(f"| {world:,} | {m_t / 1e3:,.0f} ms | {t / 1e3:,.0f} ms | {100 * (t - m_t) / m_t:+.0f} % "
                  f"| {m_c / 1e3:,.0f} ms | {cpu / 1e3:,.0f} ms | {100 * (cpu - m_c) / m_c:+.0f} % |")

    widths = [int(w) for w in args.widths.split(",")]
    print(f"\nprojection, a cluster (every process its own core), {args.ranks} ranks per node, "
          f"p50 / p99 of {args.runs} runs:")
    print("| nodes | ranks | star (one TCPStore) | store CPU | " + " | ".join(f"tree k={w}" for w in widths)
          + " | busiest agent CPU (k=" + str(widths[1 if len(widths) > 1 else 0]) + ") |")
    print("|---:|---:|---:|---:|" + "---:|" * len(widths) + "---:|")
    for nodes in [int(n) for n in args.nodes.split(",")]:
        world = nodes * args.ranks
        star = [Star(c, 1, world, 0, rng).run() for _ in range(max(1, args.runs // 4))]
        row = (f"| {nodes:,} | {world:,} | {statistics.median(s[0] for s in star) / 1e3:,.0f} ms | "
               f"{statistics.median(s[1] for s in star) / 1e3:,.0f} ms |")
        busiest = None
        for i, w in enumerate(widths):
            res = [Tree(c, nodes, args.ranks, w, rng).run() for _ in range(args.runs)]
            ts = [x[0] for x in res]
            row += f" {pct(ts, 50) / 1e3:,.1f} / {pct(ts, 99) / 1e3:,.1f} ms |"
            if i == (1 if len(widths) > 1 else 0):
                busiest = statistics.median(x[1] for x in res)
        print(row + f" {busiest / 1e3:,.2f} ms |")


if __name__ == "__main__":
    main()
