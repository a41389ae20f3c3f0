#!/usr/bin/env python3
"""A discrete-event simulation of dsrun's agent launch: the star it has today and a k-ary tree of agents
as dsrun builds it (--tree_width; issue 21). Costs come from bench/launch_sim_costs.json, measured on this
machine by bench/launch_sim_calibrate.py; the model is validated against bench/agent_scale.py's real runs.

Model (docs/benchmarks.md "Launch at scale" says what each number is and where it came from):
  * Every process (dsrun, each agent) is one event loop: a queue of work items, each taking a measured
    amount of CPU (two queues: urgent items first).
  * Before its first dial dsrun does its own per-rank work (the hostfile, the plan of the ranks' slots, the job's
    tables: CPU per rank measured on the real binary by bench/launch_predial.py, "predial" in the costs) and
    learns the rendezvous from the first host's agent (learnAgentRendezvous: a connection of its own, one
    request and its answer). A tree launch's ranks are planned as slots; each node's commands are planned by
    the build (below). --two_plans: as main had it before (every rank's command planned twice before the first
    dial, the build from the planned ranks).
  * The tree is dsrun's (plan_tree = agent_tree_plan.cc). dsrun dials the roots at once and builds the signed
    tree launch meanwhile on threads of its own (agent_tree_build.h: one per 64 nodes, at most its cores,
    --dsrun_cores; each host's request made as its part is built), and sends each root its launch once the
    roots are welcomed and the build is done; an agent reads the launch (signature, Merkle digests per node
    of its subtree, expansion: bench_tree_launch's figures, launch_sim_tree_costs.py), dials its children and
    forks its own ranks once every child has its launch, as Session::startTree does (--forward_first: its
    forks fill the gaps between the children's handshake steps, a what-if); interior agents relay per rank of
    their subtree its output and its start and clean exit merged (RanksStarted, RanksExited: a measured
    fraction of a message each, launch_sim_costs.json "merged"), and dsrun pays its measured per-rank cost
    as the events arrive. --before: dsrun and the agents as first validated (the launch built first, with
    every host's full request and a scan of all ranks per host; own ranks forked before the children's
    handshakes; three unmerged events per rank).
  * A TLS 1.3 mutual handshake is 2 round trips split across both loops (client: ClientHello 30 %,
    verify + CertificateVerify 70 %; server: key share + sign 60 %, verify the client 40 %), then Hello /
    Welcome; dsrun sends the LaunchRequests once every agent is welcomed, as it does today.
  * The star's RankStarted events reach dsrun as one batch per agent (their cost is per rank).
  * An agent spawns its ranks one after another on its loop (agent_per_rank_us each: fork, exec, the
    RankStarted event); each rank then execs on a core of its own (rank_exec_us) and is "running".
  * Messages take the one-way latency plus bytes at 10 Gb/s; a tree's forwarded request carries the
    common part once plus 64 bytes per node of the subtree (the plan is sent once per subtree).
  * validate: every work item and every rank's exec also needs one of the machine's shared cores (FIFO),
    at the share of the 2 cores the real run got (its processes' CPU over its wall time: 6 sessions share
    them), to replay this machine's runs; project: each process has its own core (a cluster).
  * cold: every connection needs its TLS handshake; warm: connections are already open (a persistent
    tree or star), only Hello / LaunchRequest / acknowledgements remain. dsrun's start-up counts in both.
    dsrun and its agents are never warm today: every job dials every edge afresh (docs/benchmarks.md says
    what a real warm launch would need).
  * A tree of two levels or more is assembled before it starts (AgentJob::assembleTree; the model has no mesh
    probe, so this is a --no_mesh_probe launch, whose nodes probe nothing): a node that reads its launch dials
    and forwards to its children as above but forks nothing; it reports up (a small message: one on its loop,
    the latency, one on its parent's) once it holds its launch and every child has reported; once every root
    has, dsrun sends TreeGo to each root (a small message each), and each node passes it to each of its
    children (a small message each, urgent) before it forks its own ranks. An interior agent killed before
    TreeGo left dsrun ends the launch with nothing started (as the real one does, outside an elastic job: the
    cell says so). --unheld: the launch as it was before (each node forks once its children have their
    launches, nothing held; the real --no_mesh_probe runs before the assembly round).
  * --straggler_refan_ms D (a what-if, not built): a parent that has not heard a child acknowledge its launch
    D ms after the first of its siblings did dials that child's children itself and sends them their
    launches; the slow child keeps its own ranks and no longer dials them.
  * stragglers: a fraction of nodes whose agent and ranks are 10x slower; jitter: every cost is multiplied
    by a log-normal factor (sigma 0.2) drawn per work item.
  * kill: one interior agent (the root's first child: the largest subtree) dies --kill_ms after dsrun's
    start-up (when the launch starts to fan out; 10 ms after dsrun's start nothing has happened yet); its children
    are re-fanned by its parent (a new handshake each, cold or warm, then the launch if they had not got
    it) once the failure is detected; the report counts from detection (detection itself is the
    heartbeat budget, not simulated).
usage: bench/launch_sim.py validate --real RESULTS.json   (a bench/agent_scale.py --json file)
       bench/launch_sim.py project [--runs 20]               (10,000 nodes: targets, widths, the curve)
Python 3 standard library only; with matplotlib installed (python3 -m venv .venv-sim && .venv-sim/bin/pip
install matplotlib), --plot FILE draws the curve.
"""
import argparse
import heapq
import json
import math
import multiprocessing
import os
import random
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


# What an interior agent relays per rank of its subtree: RankStarted, one output chunk (agent_scale.py's ranks
# print one line) and RankExited.
RELAYED_EVENTS_PER_RANK = 3


class Sim:
    """The event queue and, with `cores`, the pool of shared cores."""

    def __init__(self, rng, jitter, cores=None):
        # A fractional share of cores (what a run got of 2 cores shared with other work): ceil(share) cores,
        # each running at share / ceil(share) of its speed.
        self.speed = 1.0
        if cores is not None:
            self.speed = cores / math.ceil(cores)
            cores = math.ceil(cores)
        self.now = 0.0
        self.events = []
        self.seq = 0
        self.rng = rng
        self.jitter = jitter
        self.cores = cores
        self.core_queue = []  # (ready callback) waiting for a core

    def at(self, t, fn):
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, fn))

    def cost(self, us):
        return us * (self.rng.lognormvariate(0, 0.2) if self.jitter else 1.0)

    def run_cpu(self, us, done):
        """Runs `us` of CPU (on a shared core if there is a pool), then done()."""
        if self.cores is None:
            self.at(self.now + us, done)
            return
        us = us / self.speed

        def start():
            def finish():
                self.cores += 1
                if self.core_queue:
                    self.cores -= 1
                    self.core_queue.pop(0)()
                done()
            self.at(self.now + us, finish)
        if self.cores > 0:
            self.cores -= 1
            start()
        else:
            self.core_queue.append(start)

    def run(self):
        while self.events:
            t, _, fn = heapq.heappop(self.events)
            self.now = t
            fn()


class Loop:
    """One process's event loop: work items run one at a time, `urgent` ones first."""

    def __init__(self, sim, name, slow=1.0):
        self.sim, self.name, self.slow = sim, name, slow
        self.queues = ([], [])
        self.busy = False
        self.dead = False
        self.cpu_us = 0.0

    def post(self, us, fn, urgent=False):
        if self.dead:
            return
        self.queues[0 if urgent else 1].append((us, fn))
        if not self.busy:
            self._next()

    def _next(self):
        if self.busy:
            return
        for q in self.queues:
            if q:
                us, fn = q.pop(0)
                us = self.sim.cost(us) * self.slow
                self.cpu_us += us
                self.busy = True

                def done():
                    self.busy = False
                    if not self.dead:
                        fn()
                        self._next()
                self.sim.run_cpu(us, done)
                return


def plan_tree(count, width):
    """The agent tree dsrun builds (launcher/backends/agent/agent_tree_plan.cc, Slurm's split): the hosts are
    cut into at most `width` contiguous spans of near-equal size, each headed by its first host, and each
    span's rest is split the same way below its head. Returns (parent per host, -1 for a root; one past
    the last host of each subtree)."""
    parent, end = [-1] * count, [0] * count
    stack = [(0, count, -1)]
    while stack:
        begin, stop, up = stack.pop()
        n = stop - begin
        if n <= 0:
            continue
        spans = min(n, width)
        at = begin
        for k in range(spans):
            size = n // spans + (1 if k < n % spans else 0)
            parent[at], end[at] = up, at + size
            stack.append((at + 1, at + size, at))
            at += size
    return parent, end


class Launch:
    """One simulated launch of `count` nodes x `ranks` ranks; width 0 is the star."""

    def __init__(self, c, count, ranks, width, warm, rng, cores=None, stragglers=0.0, kill_ms=None, jitter=True,
                 straggler_factor=10.0, forward_first=False, before=False, dsrun_threads=8, merged=True,
                 straggler_refan_ms=None, dsrun_cores=None, two_plans=False, unheld=False):
        self.forward_first = forward_first  # what-if: an agent's children's handshakes before its own spawns
        # before: dsrun and the agents as they were when the tree was first validated (build before dialling,
        # every host's full request first and each host's ranks found by a scan of all ranks, own ranks forked
        # before the children's handshakes, every rank's events unmerged).
        self.before = before
        # two_plans: dsrun as main had it before it planned a tree launch's ranks as slots (RankDetail::Slots):
        # the draft and the plan of every rank's command before the first dial, the build from planned ranks.
        self.two_plans = two_plans or before
        self.dsrun_threads = dsrun_threads  # the threads dsrun builds the launch on (its cores, agent_tree_build.h)
        self.dsrun_cores = dsrun_cores or dsrun_threads  # the cores dsrun plans the ranks on
        self.merged = merged and not before  # agents merge starts and clean exits (RanksStarted, RanksExited)
        # what-if: a parent re-fans a child's children when the child has not acknowledged its launch this long
        # after its first sibling did (not built: docs/benchmarks.md says why).
        self.straggler_refan_ms = straggler_refan_ms
        self.c, self.count, self.ranks, self.width, self.warm = c, count, ranks, width, warm
        self.assembled_left = {}  # held launch: node -> children that have not reported assembled
        self.roots_assembled = 0
        self.go_sent = False
        self.aborted = False  # an agent lost before TreeGo: the real launch ends with nothing started
        self.sim = Sim(rng, jitter, cores)
        self.latency = c["loopback_one_way_us"]
        slow = set(rng.sample(range(count), int(round(stragglers * count)))) if stragglers else set()
        self.dsrun = Loop(self.sim, "dsrun")
        self.agents = [Loop(self.sim, i, straggler_factor if i in slow else 1.0) for i in range(count)]
        self.rank_running = [[] for _ in range(count)]
        self.got_launch = [False] * count
        self.acked = 0
        self.dsrun_knows = None
        self.kill = kill_ms * 1000 if kill_ms is not None else None
        self.victim = 0 if (kill_ms is not None and width) else None
        self.c_msg = c["dsrun_per_rank_us"] / 3  # a small message: dsrun's per-rank cost is ~3 of them
        self.pending_acks = {}
        self.unforwarded = {}  # node -> children not yet sent their launch (it forks its own ranks at 0)
        self.launch_acked = {}  # parent -> children that acknowledged their launch (the straggler what-if)
        self.taken = {}  # straggler -> True: its children were re-fanned by its parent
        self.reparent = {}
        self.t = c.get("tree", {})
        if width:
            self.parent, self.end = plan_tree(count, width)
            self.kids = {None: []}
            for i, p in enumerate(self.parent):
                self.kids.setdefault(None if p < 0 else p, []).append(i)
        # AgentJob::run: a tree below its roots is assembled before anything starts (roots alone were all
        # welcomed by dsrun, as the star's hosts are); before the assembly round (--unheld, --before) it was not.
        self.held = bool(width) and not (unheld or before) and not forward_first and any(
            p >= 0 for p in self.parent)

    # --- topology (the real plan's: contiguous spans in pre-order; dsrun dials the roots) --------------------
    def children(self, i):
        if self.width == 0:
            return list(range(self.count)) if i is None else []
        return self.kids.get(i, [])

    def subtree_size(self, i):
        return self.count + 1 if i is None else (self.end[i] - i if self.width else 1)

    def loop(self, i):
        return self.dsrun if i is None else self.agents[i]

    def send(self, to, nbytes, fn):
        """Delivers after the latency and the bytes; nothing reaches a dead agent."""
        delay = self.latency + nbytes * 8 / 10e3  # 10 Gb/s in bytes per µs
        self.sim.at(self.sim.now + delay, lambda: None if (to is not None and self.agents[to].dead) else fn())

    # --- protocol ------------------------------------------------------------------------------------------
    def connect(self, parent, child, then, urgent=True, fresh=False):
        """parent (None = dsrun) opens a TLS connection to child and exchanges Hello/Welcome; then()."""
        p, ch, c = self.loop(parent), self.agents[child], self.c
        def hello():
            p.post(self.c_msg, lambda: self.send(child, 300, lambda: ch.post(
                self.c_msg, lambda: self.send(parent, 300, lambda: p.post(self.c_msg, then, urgent)), True)), urgent)
        if self.warm and not fresh:  # a re-fan opens a connection that did not exist: a handshake even when warm
            hello()
            return
        p.post(0.3 * c["tls_client_us"], lambda: self.send(child, 300, lambda: ch.post(
            0.6 * c["tls_server_us"], lambda: self.send(parent, 1500, lambda: p.post(
                0.7 * c["tls_client_us"], lambda: self.send(child, 1500, lambda: ch.post(
                    0.4 * c["tls_server_us"], hello, True)), urgent)), True)), urgent)

    def start(self):
        c = self.c
        def started():
            kids = self.children(None)
            welcomed = set()
            def one_welcomed(k):
                if k in welcomed:
                    return
                welcomed.add(k)
                if len(welcomed) == len(kids) and self.built:  # launch once every root answered (or is dead)
                    for k in kids:
                        self.forward(None, k)
            self.welcomed_root = one_welcomed
            for k in kids:
                self.connect(None, k, lambda k=k: one_welcomed(k))
            if self.width and not self.before:
                # Built on dsrun's own threads (agent_tree_build.h) while its loop dials the roots: the launch
                # goes out once both the roots are welcomed and the build is done.
                self.build_left = self.dsrun_threads
                def built():
                    self.build_left -= 1
                    if self.build_left == 0:
                        self.built = True
                        if len(welcomed) == len(kids):
                            for k in kids:
                                self.forward(None, k)
                # Now each node's commands are planned as its request is made (a plan of slots); before,
                # the requests were made from every rank planned ahead.
                per_node = self.t["tree_build_planned_us_per_node" if self.two_plans else
                                  "tree_build_deferred_us_per_node"]
                share = per_node * self.count / self.dsrun_threads
                for _ in range(self.dsrun_threads):
                    self.dsrun_build_us += share
                    self.sim.run_cpu(self.sim.cost(share), built)
            if self.kill is not None:  # "10 ms into the launch": after dsrun's start-up
                self.killed_at = self.sim.now + self.kill
                self.sim.at(self.killed_at, self.kill_victim)
        self.built = not self.width or self.before
        self.dsrun_build_us = 0.0
        total = self.count * self.ranks
        plan_us = self.t.get("plan_us_per_rank", 0) * total
        plan_threads = max(1, min(total // 512, self.dsrun_cores))
        if self.two_plans:
            # dsrun planned every rank's command twice before it dialled (planWorld: the draft, then the plan with
            # what the launch learned; bench_tree_launch's planRanks), on one thread per 512 ranks up to its cores;
            # before, on one thread, plus a copy (about half a plan).
            first, then = 0.0, (2.5 * plan_us if self.before else 2 * plan_us / plan_threads)
        else:
            # Now: what dsrun does per rank from its start to the rendezvous dial and on to the first root's dial
            # (the hostfile, a draft without ranks, the plan of slots, the job's tables), measured on the real
            # binary (bench/launch_predial.py, "predial" in the costs); a star still plans every command once.
            p = c["predial"]
            first = p["predial_rendezvous_us_per_rank"] * total
            then = (p["predial_us_per_rank"] - p["predial_rendezvous_us_per_rank"]) * total
            if not self.width:
                then += plan_us / plan_threads
        if self.width and self.before:
            # dsrun built the signed tree launch before dialling: every host's full request, then the launch
            # (bench_tree_launch), and each host's ranks found by a scan of all of them (AgentJob's constructor).
            then += (self.t["tree_build_us_per_node"] * self.count
                     + self.t["rank_scan_us_per_node_rank"] * self.count * self.count * self.ranks)

        def rendezvous():
            # learnAgentRendezvous: a connection of its own to the first host's agent (a handshake when cold),
            # one request (the MASTER_PORT check or pick) and its answer, then the plan and the roots' dials.
            a0 = self.agents[0]
            self.connect(None, 0, lambda: self.send(0, 100, lambda: a0.post(self.c_msg, lambda: self.send(
                None, 100, lambda: self.dsrun.post(self.c_msg + then, started)), True)), fresh=False)
        self.dsrun.post(c["dsrun_startup_us"] + first, rendezvous)

    def request_bytes(self, child):
        if self.width:  # measured by bench/bench_tree_launch (launch_sim_tree_costs.py)
            return self.t["tree_bytes_common"] + self.t["tree_bytes_per_node"] * self.subtree_size(child)
        return 5000 + 330 * self.ranks  # the measured ~7.6 KB edge for 8 ranks, less the handshake

    def forward(self, parent, child):
        c = self.c
        nbytes = self.request_bytes(child)
        send_cost = (c["dsrun_per_node_us"] - c["tls_client_us"]) * 0.5 + nbytes * 0.001
        if parent is None and self.width == 0:
            send_cost += self.ranks * c["dsrun_per_rank_us"] / 3  # the star builds every rank's entry
        def sent():
            self.send(child, nbytes, lambda: self.receive(child))
            if parent is not None and parent in self.unforwarded and self.parent[child] == parent:
                self.unforwarded[parent] -= 1
                if self.unforwarded[parent] == 0:
                    self.spawn(parent, at_once=True)
        self.loop(parent).post(send_cost, sent, True)

    def receive(self, i):
        c, a = self.c, self.agents[i]
        if self.got_launch[i]:
            return
        def handle():
            if self.got_launch[i]:
                return
            self.got_launch[i] = True
            kids = [] if self.taken.get(i) else self.children(i)  # taken: re-fanned by its parent (what-if)
            self.pending_acks = getattr(self, "pending_acks", {})
            self.pending_acks[i] = len(kids) + 1
            if self.width and self.before and not self.forward_first:
                # As the agent did: the children's TCP connects start, then its own ranks are forked in one go on
                # the loop, and only then do the children's TLS handshakes get the loop.
                self.spawn(i, at_once=True)
            if self.held:
                # Held (Session::holdTree): nothing forked before TreeGo; reported up once every child has.
                self.assembled_left[i] = len(kids)
                if not kids:
                    self.report_assembled(i)
            elif self.width and not self.before and not self.forward_first:
                # Unheld, as the agent did before the assembly round (Session::runTree): its own ranks once every
                # child has its launch (or is lost).
                self.unforwarded[i] = len(kids)
                if not kids:
                    self.spawn(i, at_once=True)
                self.ack_launch(i)
            for k in kids:
                self.connect(i, k, lambda k=k: self.forward(i, k))
            if not self.width or self.forward_first:
                self.spawn(i)
        read = (c["agent_per_node_us"] - c["tls_server_us"]) * 0.5 + self.request_bytes(i) * 0.001
        if self.width:  # the signature, the Merkle digests of the subtree, the own ranks and the children's launches
            read += (self.t["tree_verify_us"] + self.t["tree_parse_us_per_node"] * self.subtree_size(i)
                     + self.t["tree_expand_us"])
        a.post(read, handle, True)

    def report_assembled(self, i):
        """Node i holds its launch and every child of it reported: one small message up (TreeProbeReport)."""
        parent = self.parent_of(i)
        def at_parent():
            if parent is None:
                self.roots_assembled += 1
                if self.roots_assembled == len(self.children(None)):
                    self.send_go()
                return
            self.assembled_left[parent] -= 1
            if self.assembled_left[parent] == 0:
                self.report_assembled(parent)
        self.loop(i).post(self.c_msg, lambda: self.send(parent, 100, lambda: self.loop(parent).post(
            self.c_msg, at_parent, True)), True)

    def send_go(self):
        """Every root reported: TreeGo down the tree, each node passing it on before it forks its own ranks."""
        self.go_sent = True
        if self.aborted:
            return
        def go_at(i):
            for k in self.children(i):
                self.loop(i).post(self.c_msg, lambda k=k: self.send(k, 100, lambda k=k: self.agents[k].post(
                    self.c_msg, lambda k=k: go_at(k), True)), True)
            if i is not None:
                self.spawn(i, at_once=True)
        go_at(None)

    def spawn(self, i, at_once=False):
        c, a = self.c, self.agents[i]
        per_rank = c["agent_per_rank_us"] + (c["dsrun_per_rank_us"] / 3 if self.width else 0)
        def one(r):
            def spawned():
                exec_us = self.sim.cost(c["rank_exec_us"]) * a.slow
                if self.sim.cores is None:  # its own core: no event needed until the node's last rank runs
                    self.rank_running[i].append(self.sim.now + exec_us)
                    if r + 1 == self.ranks:
                        self.sim.at(max(self.rank_running[i]), lambda: self.ranks_running(i))
                else:
                    def running():
                        self.rank_running[i].append(self.sim.now)
                        if len(self.rank_running[i]) == self.ranks:
                            self.ranks_running(i)
                    self.sim.run_cpu(exec_us, running)
                if r + 1 < self.ranks and not at_once:
                    one(r + 1)
            a.post(per_rank, spawned, at_once)
        if at_once:
            for r in range(self.ranks):
                one(r)
        else:
            one(0)

    def ranks_running(self, i):
        """Every rank of node i runs: the star's RankStarted events (one batch, costed per rank) or the
        tree's acknowledgement of node i's own part."""
        if self.agents[i].dead:
            return
        if self.width == 0:
            self.send(None, 100 * self.ranks, lambda: self.dsrun.post(self.c_msg * self.ranks, self.star_event))
        else:
            self.subtree_done(i)

    def star_event(self):
        self.acked += 1
        if self.acked == self.count:
            self.dsrun_knows = self.sim.now

    def subtree_done(self, i):
        """Own ranks running or a child's subtree acknowledged: when all are in, acknowledge upward."""
        self.pending_acks[i] -= 1
        if self.pending_acks[i] > 0:
            return
        parent = self.parent_of(i)
        below = (self.subtree_size(i) - 1) * self.ranks
        if below:  # the subtree's RankStarted, output and RankExited events relayed up, a small message's cost each
            self.loop(i).post(self.relayed_per_rank() * below * self.c_msg, lambda: None)
        def at_parent():
            if parent is None:
                # dsrun handles the subtree's events: its per-rank cost (measured; merged: launch_sim_merged_costs)
                self.dsrun.post(self.subtree_size(i) * self.ranks * self.dsrun_rank_us(), lambda: None)
                self.acked += 1
                if self.acked == len(self.children(None)):
                    self.dsrun_knows = self.sim.now
            else:
                self.subtree_done(parent)
        self.loop(i).post(self.c_msg, lambda: self.send(parent, 100, lambda: self.loop(parent).post(
            self.c_msg, at_parent, True)), True)

    def relayed_per_rank(self):
        """Small messages an interior agent relays per rank below it: RankStarted, one output chunk and
        RankExited; merged, the output chunk and a share of the merged start and exit."""
        if not self.merged:
            return RELAYED_EVENTS_PER_RANK
        return 1 + 2 * self.c["merged"]["relay_fraction"]

    def dsrun_rank_us(self):
        """dsrun's CPU per rank of the job for its events (measured with and without merged events)."""
        if not self.merged:
            return 3 * self.c_msg
        return 3 * self.c_msg * self.c["merged"]["dsrun_fraction"]

    def ack_launch(self, i):
        """Node i got its launch: its parent hears it (the straggler what-if counts from the first sibling)."""
        parent = self.parent_of(i)
        if self.straggler_refan_ms is None or parent is None:
            return
        def at_parent():
            sibs = self.launch_acked.setdefault(parent, set())
            sibs.add(i)
            if len(sibs) == 1:
                self.sim.at(self.sim.now + self.straggler_refan_ms * 1000, lambda: self.refan_stragglers(parent))
        self.loop(i).post(self.c_msg, lambda: self.send(parent, 100, lambda: self.loop(parent).post(
            self.c_msg, at_parent, True)), True)

    def refan_stragglers(self, parent):
        """What-if: every child of `parent` that has not acknowledged its launch by now keeps its own ranks but
        its children are dialled and launched by `parent` (the grandchildren then refuse the slow child)."""
        if self.agents[parent].dead:
            return
        for k in self.children(parent):
            # Only a child that has not got its launch yet: one that has is already dialling its children.
            if (k in self.launch_acked.get(parent, set()) or self.agents[k].dead or self.taken.get(k)
                    or self.got_launch[k]):
                continue
            self.taken[k] = True
            grandkids = self.children(k)
            if not grandkids:
                continue
            self.reparent.update({g: (parent,) for g in grandkids})
            self.pending_acks[parent] = self.pending_acks.get(parent, 0) + len(grandkids)
            for g in grandkids:
                self.connect(parent, g, lambda g=g: self.forward(parent, g), fresh=False)

    def parent_of(self, i):
        p = self.reparent.get(i)
        if p is not None:
            return p[0]
        return None if self.parent[i] < 0 else self.parent[i]

    def kill_victim(self):
        v = self.victim
        if self.held and not self.go_sent:
            # Lost while the tree was assembled: its parent reports it, and dsrun starts nothing anywhere.
            self.aborted = True
            self.agents[v].dead = True
            return
        self.agents[v].dead = True
        self.rank_running[v] = []
        self.reparent.update({k: (None,) for k in self.children(v)})  # re-fanned by the victim's parent (dsrun)
        if getattr(self, "pending_acks", None) is not None and v in self.pending_acks:
            self.pending_acks[v] = 10 ** 9
        # dsrun no longer waits for the victim; it waits for the victim's children instead.
        self.acked -= len(self.children(v)) - 1
        self.welcomed_root(v)  # its connection fails: dsrun launches the others without it
        for k in self.children(v):
            def attached(k=k):
                if not self.got_launch[k]:
                    self.forward(None, k)
                elif self.pending_acks.get(k, 1) <= 0:
                    self.acked += 1  # its subtree was already done; the ack went to the dead parent
            self.connect(None, k, attached, fresh=True)

    def result(self):
        self.start()
        self.sim.run()
        starts = [t for n, rs in enumerate(self.rank_running) if not self.agents[n].dead for t in rs]
        expected = (self.count - (1 if self.victim is not None else 0)) * self.ranks
        return {"all_running_ms": max(starts) / 1000 if len(starts) == expected and not self.aborted else None,
                "aborted": self.aborted,
                "killed_at_ms": getattr(self, "killed_at", 0) / 1000,
                "ranks_running": len(starts), "dsrun_knows_ms": self.dsrun_knows and self.dsrun_knows / 1000,
                "dsrun_cpu_us": self.dsrun.cpu_us + self.dsrun_build_us, "agent_cpu_us_per_node": sum(a.cpu_us for a in self.agents) / self.count,
                "max_sockets": (len(self.children(None)) if self.width == 0 else self.width + 1)}


def one_launch(job):
    """One simulated launch: (costs, nodes, width, warm, seed, Launch's keyword arguments)."""
    c, n, width, warm, seed, kw = job
    return Launch(c, n, 8, width, warm, random.Random(seed), **kw).result()


def build_threads(nodes, cores):
    """The threads dsrun builds a tree launch on (TreeLaunchBuild::threadsFor): its cores, one per 64 nodes."""
    return max(1, min(nodes // 64, cores))


def load_costs(path):
    with open(path) as f:
        return json.load(f)


def pct(xs, q):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    return xs[min(len(xs) - 1, math.ceil(q / 100 * len(xs)) - 1)]


def validate(args, c):
    """Replays every successful --no_mesh_probe star run and every tree run of an agent_scale.py --json file."""
    with open(args.real) as f:
        real = json.load(f)
    print("| nodes x 8 (cold, this machine) | shape | real all running ms | simulated ms | error | cores given "
          "| real dsrun CPU us/node | simulated | error | real agent CPU us/node | simulated | error |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    errors = {}
    for count, e in sorted(real["sizes"].items(), key=lambda kv: int(kv[0])):
        for variant, runs in e.get("runs", {}).items():
            if variant != "no_probe" and not variant.startswith("tree"):
                continue
            width = int(variant[4:].split("-")[0]) if variant.startswith("tree") else 0
            for run in runs:
                # The model has no mesh probe: only the --no_mesh_probe runs (agent_scale.py's "-noprobe").
                if run.get("rc") != 0 or "all_running_s" not in run or run.get("probe"):
                    continue
                # The share of the 2 cores this run got (others' work shares them): its processes' CPU over its wall time.
                used = run["dsrun_cpu_us"] + (run["agent_cpu_us_per_node"] + run["rank_cpu_us_per_node"]) * int(count)
                cores = min(2.0, used / (run["dsrun_exit_s"] * 1e6))
                # A dsrun from before the assembly round (agent_scale.py --before_dsrun) launched unheld.
                unheld = args.unheld or variant.endswith("-before")
                sim = Launch(c, int(count), 8, width, False, random.Random(int(count)), cores=cores,
                             jitter=False, before=args.before, merged=not args.no_merged, two_plans=args.two_plans,
                             unheld=unheld,
                             dsrun_threads=build_threads(int(count), os.cpu_count() or 1),
                             dsrun_cores=os.cpu_count() or 1).result()
                r_ms = run["all_running_s"] * 1000
                d_real = run["dsrun_cpu_us"] / int(count)
                d_sim = sim["dsrun_cpu_us"] / int(count)
                errs = [(sim["all_running_ms"] - r_ms) / r_ms, (d_sim - d_real) / d_real,
                        (sim["agent_cpu_us_per_node"] - run["agent_cpu_us_per_node"]) / run["agent_cpu_us_per_node"]]
                errors.setdefault("star" if width == 0 else "tree", []).append(errs)
                shape = "star" if width == 0 else f"tree {width}" + (" unheld" if unheld else "")
                print(f"| {count} | {shape} | {r_ms:.0f} | {sim['all_running_ms']:.0f} | {errs[0]:+.0%} | {cores:.2f} | "
                      f"{d_real:,.0f} | {d_sim:,.0f} | {errs[1]:+.0%} | {run['agent_cpu_us_per_node']:,.0f} | "
                      f"{sim['agent_cpu_us_per_node']:,.0f} | {errs[2]:+.0%} |")
    for shape, errs in errors.items():
        print(f"\n{shape}:", end="")
        for k, name in enumerate(("all running", "dsrun CPU/node", "agent CPU/node")):
            xs = [abs(e[k]) for e in errs]
            outside = sum(x > 0.2 for x in xs)
            print(f" {name}: mean |error| {statistics.mean(xs):.0%}, max {max(xs):.0%}, {outside} of {len(xs)} "
                  f"outside 20 %;", end="")
        print()


def project(args, c):
    rng = random.Random(args.seed)
    widths = [int(w) for w in args.widths.split(",")]
    out = {"targets": {}, "curve": {}}
    cells = (f"only the no-straggler cells, {args.side_runs} runs each" if args.even_only else
             f"{args.runs} runs per cell ({args.side_runs} for the kill and no-straggler cells, {args.star_runs} for "
             f"the star)")
    print(f"{args.nodes:,}-node x 8-rank projection (simulated, the tree launch "
          f"{'unheld' if args.unheld or args.before else 'assembled before it starts'}): {cells}; 1 % stragglers "
          f"({args.straggler_factor:g}x slower agent and ranks); jitter sigma 0.2; one-way latency "
          f"{c['loopback_one_way_us']:.0f} us; t = 0 at dsrun's start (its start-up: {c['dsrun_startup_us'] / 1000:.0f} ms)")
    print("\n| topology | cold p50 | cold p99 | warm p50 | warm p99 | no stragglers: cold p99 | warm p99 | interior "
          "agent killed 10 ms in: cold p99 after the kill | warm | dsrun CPU ms (cold) | sockets per process |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    pool = multiprocessing.Pool(args.jobs) if args.jobs > 1 else None

    def sim(n, width, warm, runs, **kw):
        """`runs` launches, each with its own seed drawn from the projection's generator (--jobs: in parallel)."""
        kw = dict(straggler_factor=args.straggler_factor, forward_first=args.forward_first, before=args.before,
                  two_plans=args.two_plans, unheld=args.unheld,
                  merged=not args.no_merged, dsrun_threads=build_threads(n, args.dsrun_cores),
                  dsrun_cores=args.dsrun_cores, straggler_refan_ms=args.straggler_refan_ms, **kw)
        jobs = [(c, n, width, warm, rng.random(), kw) for _ in range(runs)]
        return pool.map(one_launch, jobs) if pool else [one_launch(j) for j in jobs]
    for width in ([] if args.curve_only else ([0] if args.star_runs else []) + widths):
        row = {}
        runs = args.star_runs if width == 0 else args.runs
        side = args.star_runs if width == 0 else args.side_runs
        for warm in (False, True):
            key = "warm" if warm else "cold"
            if not args.even_only:
                row[key] = sim(args.nodes, width, warm, runs, stragglers=0.01)
            row[key + "_even"] = sim(args.nodes, width, warm, side)
            if width and not args.even_only:
                row[key + "_kill"] = sim(args.nodes, width, warm, side, stragglers=0.01, kill_ms=10)
        def p(key, q):
            rs = row.get(key)
            if rs and all(r.get("aborted") for r in rs):
                return "ends, nothing started"
            if not rs or any(r["all_running_ms"] is None for r in rs):
                return "-" if not rs else "not all running"
            return f"{pct([r['all_running_ms'] - r['killed_at_ms'] for r in rs], q):.0f}"
        name = "star (today)" if width == 0 else f"tree, width {width}"
        print(f"| {name} | {p('cold', 50)} | {p('cold', 99)} | {p('warm', 50)} | {p('warm', 99)} | {p('cold_even', 99)} "
              f"| {p('warm_even', 99)} | {p('cold_kill', 99)} | {p('warm_kill', 99)} | "
              f"{statistics.median(r['dsrun_cpu_us'] for r in row.get('cold', row['cold_even'])) / 1000:.0f} | "
              f"{row['cold_even'][0]['max_sockets']:,} |")
        if args.even_only:
            for key in ("cold_even", "warm_even"):
                print(f"  {name}, {key}: p50 {p(key, 50)} ms, runs: " +
                      ", ".join(f"{r['all_running_ms']:.0f}" for r in row[key]))
        out["targets"][name] = {k: [r["all_running_ms"] for r in v] for k, v in row.items()}
    if args.even_only:
        return
    sizes = [int(s) for s in args.curve_sizes.split(",")]
    widths = [int(w) for w in args.curve_widths.split(",")]
    print(f"\n| nodes x 8 ranks, {args.curve_stragglers:.0%} stragglers: all running, cold / warm, median of "
          f"{args.curve_runs} ms | {'star | ' if args.star_runs else ''}" +
          " | ".join(f"width {w}" for w in widths) + " |")
    print("|---|---|" + "---|" * len(widths) if args.star_runs else "|---|" + "---|" * len(widths))
    for n in sizes:
        cells = []
        for width in ([0] if args.star_runs else []) + widths:
            cold = statistics.median(r["all_running_ms"] for r in sim(n, width, False, args.curve_runs,
                                                                      stragglers=args.curve_stragglers))
            warm = statistics.median(r["all_running_ms"] for r in sim(n, width, True, args.curve_runs,
                                                                      stragglers=args.curve_stragglers))
            cells.append(f"{cold:.0f} / {warm:.0f}")
            out["curve"].setdefault(str(width), {})[n] = (cold, warm)
        print(f"| {n:,} | " + " | ".join(cells) + " |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    if args.plot:
        plot(out, sizes, widths, args.plot)


def plot(out, sizes, widths, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("launch_sim.py: matplotlib not installed; no plot (pip install matplotlib in a venv)", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for width in [w for w in [0] + widths if str(w) in out["curve"]]:
        curve = out["curve"][str(width)]
        label = "star (today)" if width == 0 else f"tree width {width}"
        ax.plot(sizes, [curve[n][0] for n in sizes], marker="o", label=label + " cold")
        ax.plot(sizes, [curve[n][1] for n in sizes], linestyle="--", marker=".", label=label + " warm")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("nodes (8 ranks each)")
    ax.set_ylabel("all ranks running, ms (simulated, median)")
    ax.set_title("dsrun launch: star vs k-ary tree of agents (simulated)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["validate", "project"])
    ap.add_argument("--costs", default=os.path.join(HERE, "launch_sim_costs.json"))
    ap.add_argument("--real", help="bench/agent_scale.py --json output (validate)")
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--widths", default="16,64", help="tree widths of the 10,000-node table")
    ap.add_argument("--curve_widths", default="4,8,16,32,64", help="tree widths of the curve")
    ap.add_argument("--curve_sizes", default="16,64,256,1000,4000,10000")
    ap.add_argument("--curve_runs", type=int, default=1)
    ap.add_argument("--side_runs", type=int, default=10, help="runs for the kill and no-straggler cells")
    ap.add_argument("--star_runs", type=int, default=3, help="runs for the star's cells (slow to simulate)")
    ap.add_argument("--straggler_factor", type=float, default=10.0)
    ap.add_argument("--curve_stragglers", type=float, default=0.01, help="fraction of stragglers in the curve")
    ap.add_argument("--curve_only", action="store_true", help="skip the 10,000-node table")
    ap.add_argument("--even_only", action="store_true",
                    help="the 10,000-node table's no-straggler cells only (each run listed)")
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--forward_first", action="store_true",
                    help="what-if: agents do their children's handshakes before their own spawns (dsrun-agent "
                         "today forks its ranks first, Session::startTree)")
    ap.add_argument("--before", action="store_true",
                    help="dsrun and the agents as first validated: the launch built before dialling (every host's "
                         "full request, a scan of all ranks per host), own ranks forked first, unmerged events")
    ap.add_argument("--two_plans", action="store_true",
                    help="dsrun as on main 4af9ffa: every rank's command planned twice before the first dial (the "
                         "draft and the plan), the tree's build from the planned ranks")
    ap.add_argument("--unheld", action="store_true",
                    help="the tree launch before the assembly round: each node forks once its children have their "
                         "launches, nothing held until TreeGo")
    ap.add_argument("--no_merged", action="store_true", help="the agents pass every rank's events up unmerged")
    ap.add_argument("--dsrun_cores", type=int, default=8,
                    help="project: the cores of dsrun's host its tree launch is built on (validate: this machine's)")
    ap.add_argument("--straggler_refan_ms", type=float, default=None,
                    help="what-if (not built): a parent re-fans the children of a child that has not acknowledged "
                         "its launch this long after its first sibling did")
    ap.add_argument("--jobs", type=int, default=1, help="project: simulate a cell's runs in this many processes")
    ap.add_argument("--json", default="")
    ap.add_argument("--plot", default="", help="write the curve as a PNG (needs matplotlib)")
    args = ap.parse_args()
    c = load_costs(args.costs)
    if args.mode == "validate":
        if not args.real:
            ap.error("validate needs --real RESULTS.json")
        validate(args, c)
    else:
        project(args, c)


if __name__ == "__main__":
    main()
