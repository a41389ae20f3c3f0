#!/usr/bin/env python3
"""Real dsrun-agents on loopback addresses at 16, 64, 256 (and 1,000) nodes x 8 ranks: the star (today's
agent backend) measured end to end, with the mesh probe's cost, old (all pairs) and new (agent_mesh_plan.h).

Each node is one dsrun-agent with its own node certificate listening on 127.21.X.Y (Linux routes all of
127/8 to lo, so no root and no namespaces are needed); the hostfile gives each 8 slots. Per size:
  * dsrun runs with --agent_heartbeat_ms 2000 (--heartbeat_ms): the default budget, 5 x 500 ms, is missed
    at 256 nodes when the 2 shared cores are saturated (load 80-170 seen), which ends the job.
  * --runs timing runs of the default (mesh probe on) and --no_mesh_probe, interleaved. The ranks run
    /bin/date +%s.%N (as small as /bin/true, but it prints when it started, so "all running" is measured
    where it happens): launch-to-all-running = the latest rank start minus dsrun's start; launch-to-all-
    exited = the last "exited" line of the agents' logs (ms) minus dsrun's start; dsrun's exit.
  * --tree_widths W1,W2: the same timing runs through agent trees of those widths (dsrun --tree_width), with
    the mesh probe through the tree (the default) and with --no_mesh_probe, interleaved with the star's
    (--tree_variants picks which). A tree launch is assembled before it starts, probe or not: dsrun's DEBUG
    "tree assembled: ... after N ms" (no probe) is the assembly round's span, roots sent -> last report.
    --before_dsrun PATH adds the --no_mesh_probe tree runs of another dsrun (one from before the assembly
    round, which forwarded and forked unheld) on the same agents, interleaved: the round's cost, same run.
  * CPU per node (the primary figure: on 2 shared cores the wall clock measures the scheduler): dsrun's
    user+sys (/usr/bin/time) / N, each agent's own CPU (/proc/PID/task/*/schedstat, ns) and its ranks'
    (reaped children, /proc/PID/stat, 10 ms ticks), before and after.
  * one resource run per shape (the star without the probe, each tree width) with ranks of /bin/sleep:
    sockets and RSS/PSS of dsrun and of the agents (sampled every 0.2 s, the peak kept), and bytes per
    edge from `ss -tin` (every established connection into an agent, TLS records and handshake included,
    the heartbeats of the sleep too): dsrun's edges (to the agents it dialled) and, in a tree, the
    parent -> child edges, medians. --trace_max N also runs dsrun under strace up to N nodes (its own
    read/write bytes per connection; strace slows dsrun).
  * the old probe (all N x (N-1) pairs) once, with --old_dsrun (a dsrun built before agent_mesh_plan.h,
    e.g. build/launcher/dsrun of a checkout of an older main), up to --old_max nodes.
Every agent is stopped afterwards and the script checks that nothing is left (agent pids, processes with
the bench's job ids, listeners on the port). Prints markdown tables; --json FILE keeps the raw numbers.
  bench/agent_scale.py [--sizes 16,64,256] [--runs 3] [--ranks 8] [--build build] [--old_dsrun PATH]
                       [--tree_widths 4,16]
Needs python3 (stdlib only), /usr/bin/time, strace, ss and the built dsrun and dsrun-agent.
"""
import argparse
import datetime
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

TICK_US = 1e6 / os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


NET = 21  # the second octet of the agents' addresses (--net): another bench on the same machine picks another


def address(i):
    return f"127.{NET}.{i // 250}.{i % 250 + 1}"


def proc_stat(pid):
    """(own CPU, reaped children's CPU) in µs of a live process: own from schedstat (ns, every thread),
    children from stat's cutime+cstime (10 ms ticks; summed over many agents)."""
    own = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/schedstat") as f:
            own += int(f.read().split()[0]) / 1000
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return own, (int(fields[13]) + int(fields[14])) * TICK_US


SEND_CALLS = {"write", "writev", "sendmsg", "sendto"}
RECV_CALLS = {"read", "readv", "recvmsg", "recvfrom"}


def edge_bytes(trace, port):
    """{agent address: [bytes dsrun sent, bytes dsrun received]} from an `strace -f -yy` log of dsrun."""
    edges = {}
    pending = {}  # pid -> (call, peer) of an <unfinished ...> call
    call_re = re.compile(r"^(\d+)\s+(\w+)\((\d+)<TCP(?:v6)?:\[[^\]]*->([^\]]*)\]>")
    with open(trace, errors="replace") as f:
        for line in f:
            m = call_re.match(line)
            if m:
                pid, call, peer = m.group(1), m.group(2), m.group(4)
                if line.rstrip().endswith("<unfinished ...>"):
                    pending[pid] = (call, peer)
                    continue
            else:
                r = re.match(r"^(\d+)\s+<\.\.\. (\w+) resumed>", line)
                if not r or r.group(1) not in pending:
                    continue
                call, peer = pending.pop(r.group(1))
            done = re.search(r"\)\s+=\s+(-?\d+)", line)
            if not done or int(done.group(1)) <= 0 or not peer.endswith(f":{port}"):
                continue
            host = peer.rsplit(":", 1)[0]
            side = 0 if call in SEND_CALLS else 1 if call in RECV_CALLS else None
            if side is not None:
                edges.setdefault(host, [0, 0])[side] += int(done.group(1))
    return edges


def edge_snapshot(port, edges):
    """Every established TCP connection into an agent (local port = the agents' port), from `ss -tin`: keeps
    per connection the most bytes seen each way, {(agent address, peer): [parent -> agent, agent -> parent]}
    (TCP payload: TLS records and handshake included). Covers dsrun's edges and, in a tree, every parent's
    edge to its children, without tracing anyone."""
    out = subprocess.run(["ss", "-Htin", "state", "established", f"( sport = :{port} )"], capture_output=True,
                         text=True).stdout.splitlines()
    key = None
    for line in out:
        if not line.startswith(("\t", " ")):
            f = line.split()
            key = (f[2].rsplit(":", 1)[0], f[3]) if len(f) >= 4 else None
            continue
        if key is None:
            continue
        got = re.search(r"bytes_received:(\d+)", line)
        sent = re.search(r"bytes_sent:(\d+)", line)
        e = edges.setdefault(key, [0, 0])
        e[0] = max(e[0], int(got.group(1)) if got else 0)
        e[1] = max(e[1], int(sent.group(1)) if sent else 0)


def sockets(pid):
    n = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                    n += 1
            except OSError:
                pass
    except OSError:
        return 0
    return n


def memory_kb(pid):
    """(RSS, PSS) in KiB; PSS shares the binary's and libraries' pages among the agents that map them."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def child_running(parent, binary):
    """The pid of `parent`'s child that runs `binary` (dsrun under strace), or None."""
    try:
        for kid in open(f"/proc/{parent}/task/{parent}/children").read().split():
            if os.path.realpath(f"/proc/{kid}/exe") == binary:
                return int(kid)
    except OSError:
        pass
    return None


def log_time(stamp, day):
    """'HH:MM:SS.mmm' of a log line on `day` -> unix seconds."""
    t = datetime.datetime.strptime(f"{day} {stamp}", "%Y-%m-%d %H:%M:%S.%f")
    return t.timestamp()


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


class Cluster:
    """N agents on loopback addresses; start() waits until every one listens, stop() ends them all."""

    def __init__(self, args, work, count, port):
        self.args, self.work, self.count, self.port = args, work, count, port
        self.addrs = [address(i) for i in range(count)]
        self.procs = []
        self.logs = []

    def start(self):
        for a in self.addrs:
            node = os.path.join(self.work, "nodes", a)
            if not os.path.isdir(node):
                subprocess.run([self.args.dsrun, "--make_node_cert", os.path.join(self.work, "tls"), "--host", a,
                                "--out", node], check=True, stdout=subprocess.DEVNULL)
            log = os.path.join(self.work, f"agent-{self.count}-{a}.log")
            self.logs.append(log)
            with open(log, "w") as out:
                self.procs.append(subprocess.Popen(
                    [self.args.agent, "--listen", f"{a}:{self.port}", "--tls_dir", node, "--kill_grace_s", "2"],
                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.time() + 60 + self.count * 0.2
        waiting = set(range(self.count))
        while waiting:
            for i in list(waiting):
                if self.procs[i].poll() is not None:
                    raise SystemExit(f"agent_scale.py: agent {self.addrs[i]}:{self.port} exited at start:\n"
                                     + open(self.logs[i]).read())
                if "listening on" in open(self.logs[i]).read():
                    waiting.discard(i)
            if time.time() > deadline:
                raise SystemExit(f"agent_scale.py: {len(waiting)} agents not listening after "
                                 f"{deadline - time.time():.0f} s (first: {self.addrs[min(waiting)]})")
            time.sleep(0.1)

    def snapshot(self):
        """Per agent: (own cpu µs, children cpu µs, log bytes)."""
        out = []
        for p, log in zip(self.procs, self.logs):
            own, children = proc_stat(p.pid)
            out.append((own, children, os.path.getsize(log)))
        return out

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def run_job(args, cluster, hostfile, job_id, dsrun, probe, rank_argv, sample=False, tree_width=0):
    traced = sample and cluster.count <= args.trace_max
    before = cluster.snapshot()
    trace = os.path.join(cluster.work, "trace")
    wrapper = ["strace", "-f", "-qq", "-yy", "-e", "trace=" + ",".join(sorted(SEND_CALLS | RECV_CALLS)), "-e",
               "signal=none", "--seccomp-bpf", "-o", trace] if traced else ["/usr/bin/time", "-f", "TIME %e %U %S %M"]
    cmd = wrapper + [dsrun, "--launcher", "agent", "--agent_port",
           str(cluster.port), "--tls_dir", os.path.join(cluster.work, "tls"), "-H", hostfile, "--master_addr",
           cluster.addrs[0], "--master_port", "0", "--agent_heartbeat_ms", str(args.heartbeat_ms), "--no_python",
           "--no_local_rank"]
    if not probe:
        cmd.append("--no_mesh_probe")
    # 0 explicitly: the star whatever dsrun's default (--tree_width auto picks a tree above 16 hosts)
    cmd += ["--tree_width", str(tree_width)]
    env = dict(os.environ, DSRUN_LOG_LEVEL="debug", DSRUN_JOB_ID=job_id)
    out_path = os.path.join(cluster.work, "out")
    err_path = os.path.join(cluster.work, "err")
    peaks = {"dsrun_sockets": 0, "dsrun_rss_kb": 0, "agent_sockets_max": 0, "agent_rss_kb": [], "agent_pss_kb": []}
    ss_edges = {}
    t0 = time.time()
    with open(out_path, "w") as out, open(err_path, "w") as err:
        p = subprocess.Popen(cmd + rank_argv, stdout=out, stderr=err, env=env)
        reaped = None  # (status, usage) once dsrun's wrapper is reaped
        if sample:
            while True:
                pid, status, usage = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    reaped = (status, usage)
                    break
                dsrun_pid = child_running(p.pid, dsrun)
                if dsrun_pid and time.time() - t0 > args.job_timeout:
                    # A hung dsrun ends the bench's job, not the bench (its agents then stop its ranks).
                    os.kill(dsrun_pid, signal.SIGKILL)
                    peaks["hung"] = f"dsrun killed after {args.job_timeout} s"
                if dsrun_pid:
                    peaks["dsrun_sockets"] = max(peaks["dsrun_sockets"], sockets(dsrun_pid))
                    peaks["dsrun_rss_kb"] = max(peaks["dsrun_rss_kb"], memory_kb(dsrun_pid)[0])
                rss, pss, socks = [], [], []
                for a in cluster.procs:
                    r, s = memory_kb(a.pid)
                    rss.append(r)
                    pss.append(s)
                    socks.append(sockets(a.pid))
                if max(socks) >= peaks["agent_sockets_max"]:
                    peaks["agent_sockets_max"] = max(socks)
                    peaks["agent_sockets_median"] = statistics.median(socks)
                    peaks["agent_rss_kb"], peaks["agent_pss_kb"] = rss, pss
                edge_snapshot(cluster.port, ss_edges)
                time.sleep(0.2)
        # wait4's usage of /usr/bin/time includes dsrun's (its reaped child) in µs; time's own -f figures
        # come in 10 ms steps, too coarse for 16 nodes.
        if reaped is None:
            watchdog = threading.Timer(args.job_timeout, p.kill)  # a hung job ends the bench, not the machine
            watchdog.start()
            _, status, usage = os.wait4(p.pid, 0)
            watchdog.cancel()
            reaped = (status, usage)
        status, usage = reaped
        rc = os.waitstatus_to_exitcode(status)
        p.returncode = rc
    t1 = time.time()
    after = cluster.snapshot()
    err_text = open(err_path).read()
    m = re.search(r"TIME ([\d.]+) ([\d.]+) ([\d.]+) (\d+)", err_text)
    res = {"rc": rc, "dsrun_exit_s": t1 - t0, "probe": probe}
    if rc != 0:
        res["error"] = next((line for line in err_text.splitlines() if line.startswith("dsrun:")), err_text[-300:])
    if args.keep_logs:
        shutil.copy(err_path, os.path.join(args.keep_logs, f"{job_id}.err"))
    if m:
        res["dsrun_cpu_us"] = (usage.ru_utime + usage.ru_stime) * 1e6
        res["dsrun_maxrss_kb"] = int(m.group(4))
    n = cluster.count
    res["agent_cpu_us_per_node"] = sum(a[0] - b[0] for a, b in zip(after, before)) / n
    res["rank_cpu_us_per_node"] = sum(a[1] - b[1] for a, b in zip(after, before)) / n
    if traced:
        edges = edge_bytes(trace, cluster.port)
        res["edges_traced"] = len(edges)
        if edges:
            res["edge_bytes_to_agent"] = statistics.median(e[0] for e in edges.values())
            res["edge_bytes_from_agent"] = statistics.median(e[1] for e in edges.values())
    pm = re.search(r"mesh probe: (\d+) pairs of (\d+) agents connected in (\d+) ms", err_text)
    if pm:
        res["probe_pairs"], res["probe_ms"] = int(pm.group(1)), int(pm.group(3))
    am = re.search(r"tree assembled: (\d+) agents hold their launch after (\d+) ms", err_text)
    if am:
        res["assembly_ms"] = int(am.group(2))
    starts = [float(x) for x in open(out_path).read().split() if re.fullmatch(r"\d+\.\d+", x)]
    if rank_argv[0] == "/bin/date":
        res["ranks_reported"] = len(starts)
        if starts:
            res["all_running_s"] = max(starts) - t0
    # The agents' logs: the last rank exit of this job.
    day = datetime.date.today().isoformat()
    last = None
    warnings = {}  # the agents' WARN and lost-launcher lines of this job, by what they say (numbers dropped)
    for log, b in zip(cluster.logs, before):
        with open(log) as f:
            f.seek(b[2])
            for line in f:
                if " W " in line[:40] or "no heartbeat for" in line:
                    what = re.sub(r"[\d.:]+", "N", line.split("] ", 1)[-1].strip())[:80]
                    warnings[what] = warnings.get(what, 0) + 1
                if "exited with" in line:
                    t = log_time(line.split()[3], day)
                    last = t if last is None else max(last, t)
    if last is not None:
        res["all_exited_s"] = last - t0
    res["agent_warnings"] = warnings
    # When dsrun had each agent welcomed (its DEBUG "ready" lines): all at once, every handshake ends late.
    ready = sorted(log_time(m.group(1), day) - t0 for m in re.finditer(r"^\[dsrun(?: \S+)? D (\d\S+) agent_job\.cc:\d+\] agent \S+ \(.*\) ready$",
                                                                      err_text, re.M))
    if ready:
        res["welcomed_ms"] = [round(ready[0] * 1e3), round(statistics.median(ready) * 1e3), round(ready[-1] * 1e3)]
    if sample:
        res.update(peaks)
        # dsrun's edges are those into the agents it dialled (its "ready" lines); the rest are parent -> child.
        dialled = set(re.findall(r"agent_job\.cc:\d+\] agent (\S+?):\d+ \(.*\) ready$", err_text, re.M))
        root = [e for (a, _), e in ss_edges.items() if a in dialled]
        inner = [e for (a, _), e in ss_edges.items() if a not in dialled]
        res["edges_seen"], res["dsrun_edges_seen"] = len(ss_edges), len(root)
        for name, es in (("dsrun", root), ("inner", inner)):
            if es:
                res[f"{name}_edge_bytes_down"] = statistics.median(e[0] for e in es)
                res[f"{name}_edge_bytes_up"] = statistics.median(e[1] for e in es)
                res[f"{name}_edge_bytes_down_max"] = max(e[0] for e in es)
    return res


def leftovers(cluster):
    """What the bench left behind: live agents, processes of its jobs, listeners on its port."""
    found = [f"agent pid {p.pid}" for p in cluster.procs if p.poll() is None]
    marker = f"MASTER_ADDR={cluster.addrs[0]}\0".encode()  # in every rank's environment, and 127.NET/16 is ours
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if marker in open(f"/proc/{pid}/environ", "rb").read():
                found.append(f"pid {pid} (a rank of the bench)")
        except OSError:
            pass
    ss = subprocess.run(["ss", "-Hltn", f"sport = :{cluster.port}"], capture_output=True, text=True).stdout
    found += [f"listener {line.split()[3]}" for line in ss.splitlines() if line.strip()]
    return found


def stop_on_signal(signum, _frame):
    # SIGTERM / SIGHUP end the bench through the same clean-up as an error: every agent is stopped.
    raise SystemExit(f"agent_scale.py: stopped by signal {signum}")


def main():
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, stop_on_signal)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="16,64,256")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--build", default="build")
    ap.add_argument("--old_dsrun", default="", help="a dsrun with the all-pairs probe")
    ap.add_argument("--old_max", type=int, default=256, help="largest size the old probe is tried at")
    ap.add_argument("--job_timeout", type=int, default=300)
    ap.add_argument("--heartbeat_ms", type=int, default=2000,
                    help="dsrun --agent_heartbeat_ms (budget x5): on 2 shared cores the default 500 ms (2.5 s budget) "
                         "is missed at 256 nodes when other work starves dsrun's loop")
    ap.add_argument("--trace_max", type=int, default=0,
                    help="largest size whose resource run traces dsrun for bytes per edge (strace slows dsrun)")
    ap.add_argument("--tree_widths", default="",
                    help="also launch through agent trees of these widths (dsrun --tree_width, e.g. 4,16), "
                         "interleaved with the star's runs")
    ap.add_argument("--json", default="")
    ap.add_argument("--net", type=int, default=21, help="the agents listen on 127.NET.X.Y (another bench running "
                                                           "on this machine at the same time needs another NET)")
    ap.add_argument("--skip_star", action="store_true", help="only the --tree_widths runs")
    ap.add_argument("--tree_variants", default="probe,noprobe",
                    help="which tree runs per width: probe (the default launch), noprobe (--no_mesh_probe)")
    ap.add_argument("--before_dsrun", default="",
                    help="also run each width --no_mesh_probe with this dsrun (e.g. one from before the assembly "
                         "round), interleaved, on the same agents")
    ap.add_argument("--skip_resources", action="store_true", help="no resource (/bin/sleep) jobs")
    ap.add_argument("--keep_logs", default="", help="copy each job's dsrun stderr and every agent's log here")
    args = ap.parse_args()
    if args.keep_logs:
        os.makedirs(args.keep_logs, exist_ok=True)
    global NET
    NET = args.net
    args.dsrun = os.path.realpath(os.path.join(args.build, "launcher/dsrun"))
    args.agent = os.path.realpath(os.path.join(args.build, "agent/dsrun-agent"))
    for b in (args.dsrun, args.agent, "/usr/bin/time"):
        if not os.access(b, os.X_OK):
            raise SystemExit(f"agent_scale.py: {b} not found or not executable (build dsrun and dsrun-agent first)")
    work = tempfile.mkdtemp(prefix="dsrun-agent-scale.")
    subprocess.run([args.dsrun, "--make_tls", os.path.join(work, "tls")], check=True, stdout=subprocess.DEVNULL)
    port = 29700 + random.randrange(250)
    job_prefix = f"agent-scale-{os.getpid()}-"
    results = {"load_before": open("/proc/loadavg").read().split()[:3], "sizes": {}}
    problems = []
    try:
        for count in [int(s) for s in args.sizes.split(",")]:
            cluster = Cluster(args, work, count, port)
            started = time.time()
            try:
                cluster.start()
                entry = {"agents_start_s": time.time() - started, "load": open("/proc/loadavg").read().split()[:3]}
                hostfile = os.path.join(work, f"hostfile-{count}")
                with open(hostfile, "w") as f:
                    f.writelines(f"{a} slots={args.ranks}\n" for a in cluster.addrs)
                widths = [int(w) for w in args.tree_widths.split(",") if w]
                runs = {} if args.skip_star else {"probe": [], "no_probe": []}
                kinds = args.tree_variants.split(",")
                for w in widths:
                    if "probe" in kinds:
                        runs[f"tree{w}"] = []
                    if "noprobe" in kinds:
                        runs[f"tree{w}-noprobe"] = []
                    if args.before_dsrun:
                        runs[f"tree{w}-noprobe-before"] = []
                for r in range(args.runs):
                    for variant in runs:
                        width = int(variant[4:].split("-")[0]) if variant.startswith("tree") else 0
                        probe = variant == "probe" or (width > 0 and "-noprobe" not in variant)
                        dsrun = args.before_dsrun if variant.endswith("-before") else args.dsrun
                        res = run_job(args, cluster, hostfile, f"{job_prefix}{count}-{variant}-{r}", dsrun,
                                      probe, ["/bin/date", "+%s.%N"], tree_width=width)
                        runs[variant].append(res)
                        print(f"[{count}] {variant} run {r}: {json.dumps(res)}", file=sys.stderr)
                entry["runs"] = runs
                if args.old_dsrun and count <= args.old_max:
                    entry["old_probe"] = run_job(args, cluster, hostfile, f"{job_prefix}{count}-old", args.old_dsrun,
                                                 True, ["/bin/date", "+%s.%N"])
                    print(f"[{count}] old probe: {json.dumps(entry['old_probe'])}", file=sys.stderr)
                # Ranks that sleep for longer than a launch takes, so every connection is sampled while open;
                # the edges' bytes include the heartbeats of that time (about 3 frames a second each way).
                sleep_s = min(20.0, max(3.0, 3 * (median(x.get("all_exited_s") for x in runs.get("no_probe", [])) or
                                                  (20.0 if args.skip_star else 1.0))))
                entry["sleep_s"] = sleep_s
                entry["resources"] = {}
                # One resource job per shape: the star, and each tree width (without the probe, as the star's).
                trees = [f"tree{w}" for w in widths]  # whichever --tree_variants: resource jobs run unprobed
                for variant in [] if args.skip_resources else ([] if args.skip_star else ["no_probe"]) + trees:
                    width = int(variant[4:].split("-")[0]) if variant.startswith("tree") else 0
                    res = run_job(args, cluster, hostfile, f"{job_prefix}{count}-res-{variant}", args.dsrun, False,
                                  ["/bin/sleep", f"{sleep_s:.1f}"], sample=True, tree_width=width)
                    rss, pss = res.pop("agent_rss_kb"), res.pop("agent_pss_kb")
                    res["agent_rss_kb_median"] = statistics.median(rss) if rss else None
                    res["agent_pss_kb_median"] = statistics.median(pss) if pss else None
                    entry["resources"][variant] = res
                    print(f"[{count}] resources {variant}: {json.dumps(res)}", file=sys.stderr)
                entry["load_after"] = open("/proc/loadavg").read().split()[:3]
                results["sizes"][count] = entry
            finally:
                cluster.stop()
                if args.keep_logs:
                    os.makedirs(os.path.join(args.keep_logs, f"agents-{count}"), exist_ok=True)
                    for log in cluster.logs:
                        shutil.copy(log, os.path.join(args.keep_logs, f"agents-{count}"))
                time.sleep(0.5)
                left = leftovers(cluster)
                if left:
                    problems.append(f"{count} agents: left behind: {', '.join(left[:10])}")
                results["sizes"].setdefault(count, {})["left_behind"] = left
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["work_dir_removed"] = not os.path.exists(work)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    report(results, args)
    if problems:
        raise SystemExit("agent_scale.py: " + "; ".join(problems))


def fmt(x, scale=1.0, digits=0):
    return "-" if x is None else f"{x * scale:,.{digits}f}"


def report(results, args):
    print(f"\n| nodes x {args.ranks} ranks | all running ms | all exited ms | dsrun exit ms | dsrun CPU us/node "
          f"| agent CPU us/node | ranks CPU us/node |")
    print("|---|---|---|---|---|---|---|")
    for count, e in results["sizes"].items():
        for variant, rs in e.get("runs", {}).items():
            if not rs:
                continue
            ok = [r for r in rs if r["rc"] == 0]
            g = lambda k: median(r.get(k) for r in ok)  # noqa: E731
            name = f"{count}" + {"probe": " star (probe)", "no_probe": " star --no_mesh_probe"}.get(
                variant, f" tree width {variant[4:].split('-')[0]}" + (" --no_mesh_probe" if
                                                                      "-noprobe" in variant else " (probe)")
                + (" (--before_dsrun)" if variant.endswith("-before") else ""))
            print(f"| {name} | {fmt(g('all_running_s'), 1e3)} | {fmt(g('all_exited_s'), 1e3)} | "
                  f"{fmt(g('dsrun_exit_s'), 1e3)} | {fmt(g('dsrun_cpu_us') and g('dsrun_cpu_us') / int(count))} | "
                  f"{fmt(g('agent_cpu_us_per_node'))} | {fmt(g('rank_cpu_us_per_node'))} |"
                  + ("" if len(ok) == len(rs) else f" ({len(rs) - len(ok)} of {len(rs)} failed)"))
    print("\n| nodes | probe pairs new | new probe ms | old pairs | old probe ms / outcome |")
    print("|---|---|---|---|---|")
    for count, e in results["sizes"].items():
        rs = [r for r in e.get("runs", {}).get("probe", []) if r["rc"] == 0]
        old = e.get("old_probe")
        old_text = "-" if not old else (f"{old.get('probe_ms')} ms" if old["rc"] == 0 else f"failed: {old.get('error')}")
        print(f"| {count} | {rs[0].get('probe_pairs') if rs else '-'} | {fmt(median(r.get('probe_ms') for r in rs))} | "
              f"{int(count) * (int(count) - 1)} | {old_text} |")
    print("\n| nodes | tree width | probe pairs | probe ms (dsrun: roots sent -> last report) | all running ms, probe / "
          "--no_mesh_probe |")
    print("|---|---|---|---|---|")
    for count, e in results["sizes"].items():
        for variant, rs in e.get("runs", {}).items():
            if not variant.startswith("tree") or "-noprobe" in variant:
                continue
            ok = [r for r in rs if r["rc"] == 0]
            off = [r for r in e["runs"].get(variant + "-noprobe", []) if r["rc"] == 0]
            print(f"| {count} | {variant[4:]} | {ok[0].get('probe_pairs') if ok else '-'} | "
                  f"{fmt(median(r.get('probe_ms') for r in ok))} | {fmt(median(r.get('all_running_s') for r in ok), 1e3)}"
                  f" / {fmt(median(r.get('all_running_s') for r in off), 1e3)} |")
    print("\n| nodes | tree width | --no_mesh_probe | passed | assembly ms (roots sent -> last report; runs) | "
          "all running ms (runs) | dsrun CPU us/node |")
    print("|---|---|---|---|---|---|---|")
    for count, e in results["sizes"].items():
        for variant, rs in e.get("runs", {}).items():
            if not variant.startswith("tree") or "-noprobe" not in variant:
                continue
            ok = [r for r in rs if r["rc"] == 0]
            which = "before (--before_dsrun)" if variant.endswith("-before") else "this dsrun"
            runs_of = lambda k, s=1.0: ", ".join(fmt(r.get(k), s) for r in ok)  # noqa: E731
            print(f"| {count} | {variant[4:].split('-')[0]} | {which} | {len(ok)} of {len(rs)} | "
                  f"{fmt(median(r.get('assembly_ms') for r in ok))} ({runs_of('assembly_ms')}) | "
                  f"{fmt(median(r.get('all_running_s') for r in ok), 1e3)} ({runs_of('all_running_s', 1e3)}) | "
                  f"{fmt(median(r.get('dsrun_cpu_us') for r in ok) and median(r.get('dsrun_cpu_us') for r in ok) / int(count))} |"
                  + "".join(f" failed: {r.get('error', '')[:160]};" for r in rs if r["rc"] != 0))
    print("\n| nodes | shape | dsrun sockets | dsrun RSS MiB | agent sockets (median/max) | agent RSS MiB | agent PSS MiB "
          "| dsrun edge bytes down/up | agent-agent edge bytes down/up (max down) | edges seen |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for count, e in results["sizes"].items():
        for variant, r in (e.get("resources") or {}).items():
            shape = "star" if variant == "no_probe" else f"tree width {variant[4:].split('-')[0]}"
            inner = (f"{fmt(r.get('inner_edge_bytes_down'))} / {fmt(r.get('inner_edge_bytes_up'))} "
                     f"({fmt(r.get('inner_edge_bytes_down_max'))})" if r.get("inner_edge_bytes_down") else "-")
            print(f"| {count} | {shape}{'' if r['rc'] == 0 else ' (failed)'} | {r['dsrun_sockets']} | "
                  f"{fmt(r.get('dsrun_rss_kb'), 1 / 1024, 1)} | "
                  f"{fmt(r.get('agent_sockets_median'))}/{r['agent_sockets_max']} | "
                  f"{fmt(r.get('agent_rss_kb_median'), 1 / 1024, 1)} | {fmt(r.get('agent_pss_kb_median'), 1 / 1024, 1)} | "
                  f"{fmt(r.get('dsrun_edge_bytes_down'))} / {fmt(r.get('dsrun_edge_bytes_up'))} | {inner} | "
                  f"{r.get('edges_seen')} |")
    print(f"\n(resource jobs: ranks of /bin/sleep {', '.join(str(e.get('sleep_s')) for e in results['sizes'].values())} s)")
    print(f"\nload (1/5/15 min) before: {' '.join(results['load_before'])}; per size: " + "; ".join(
        f"{c}: {' '.join(e.get('load', []))} -> {' '.join(e.get('load_after', []))}" for c, e in results["sizes"].items()))
    print("left behind: " + ("nothing" if all(not e.get("left_behind") for e in results["sizes"].values())
                             and results["work_dir_removed"] else "see above"))


if __name__ == "__main__":
    main()
