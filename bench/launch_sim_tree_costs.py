#!/usr/bin/env python3
"""Measures what a tree launch costs beyond the star's (bench/bench_tree_launch: CPU of building, signing,
reading and slicing the signed launch) and merges it into bench/launch_sim_costs.json as "tree", for
bench/launch_sim.py's tree model:
  * tree_verify_us: an agent's signature check (one ECDSA P-256 verify per launch), median over every level;
  * tree_parse_us_per_node: reading the launch and its Merkle digests, per node of the receiver's subtree
    (fit through the origin over every level with a subtree of 4 nodes or more);
  * tree_expand_us: expanding the own ranks and slicing the children's launches, median;
  * tree_bytes_common / tree_bytes_per_node: the received launch's bytes, least squares over subtree size;
  * tree_build_us_per_node: dsrun's build + sign + slice, per node, as it was before agent_tree_build.h:
    every host's full request first (treeLaunchNodes), then the launch;
  * tree_build_ondemand_us_per_node: the same as dsrun does it now, each request made as its part is built
    (one thread; dsrun spreads it over its cores, off its loop, while it dials the roots);
  * rank_scan_us_per_node_rank: WorldPlan::ranksOnNode for every host, as AgentJob did before ranksByNode,
    per host and rank of the job (it grew with their product: 2.5 s at 10,000 x 8);
  * plan_us_per_rank: planRanks (every rank's argv and environment), per rank: what dsrun did twice before it
    dialled, until a tree launch planned its ranks' slots only (RankDetail::Slots);
  * plan_slots_us_per_rank: planRanks of the slots only (rank, host, slot, cores), per rank: a tree launch's
    plan before the dial now;
  * tree_build_deferred_us_per_node: the build from a plan of slots (each node's commands planned as its
    request is made, one thread), per node; tree_build_planned_us_per_node: the same build from the fully
    planned ranks (the difference is the commands' planning, moved from before the dial into the build).
Runs bench_tree_launch for 64, 256 and 1,000 nodes at widths 4, 8 and 16 (8 ranks a node).
  bench/launch_sim_tree_costs.py [--build build] [--costs bench/launch_sim_costs.json] [--reps 3]
"""
import argparse
import json
import os
import re
import statistics
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
LEVEL = re.compile(r"level \d+ agent: receives (\d+) bytes \((\d+) nodes.*parse\+digests ([\d.]+) ms, signature "
                   r"([\d.]+) ms, expand .* ([\d.]+) ms")
DSRUN = re.compile(r"dsrun: requests ([\d.]+) ms, build ([\d.]+) ms, sign ([\d.]+) ms, slice ([\d.]+) ms")
# dsrun as it is now (agent_tree_build.h): each request made as its part is built, on one thread.
PLAN = re.compile(r"dsrun: planRanks ([\d.]+) ms \(CPU\) for (\d+) ranks")
SCAN = re.compile(r"WorldPlan::ranksOnNode per host ([\d.]+) ms")
ONDEMAND = re.compile(r"dsrun, requests made while building, 1 thread\(s\): ([\d.]+) ms CPU")
SLOTS = re.compile(r"dsrun: planRanks of slots ([\d.]+) ms \(CPU\) for (\d+) ranks")
DEFERRED = re.compile(r"dsrun, planned ranks' requests made while building, 1 thread\(s\): ([\d.]+) ms CPU; commands "
                      r"planned while building, 1 thread\(s\): ([\d.]+) ms CPU")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--costs", default=os.path.join(HERE, "launch_sim_costs.json"))
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    binary = os.path.join(args.build, "bench", "bench_tree_launch")
    if not os.access(binary, os.X_OK):
        raise SystemExit(f"launch_sim_tree_costs.py: {binary} not built (cmake --build {args.build} --target "
                         "bench_tree_launch)")
    levels, build, ondemand, scan, plan, slots, planned_build, deferred = [], [], [], [], [], [], [], []
    for _ in range(args.reps):
        for nodes in (64, 256, 1000):
            for width in (4, 8, 16):
                out = subprocess.run([binary, str(nodes), str(width), "8", "1"], capture_output=True, text=True,
                                     check=True).stdout
                levels += [tuple(float(x) for x in m.groups()) for m in LEVEL.finditer(out)]
                d = DSRUN.search(out)
                build.append(sum(float(x) for x in d.groups()) * 1000 / nodes)
                ondemand.append(float(ONDEMAND.search(out).group(1)) * 1000 / nodes)
                m = PLAN.search(out)
                plan.append(float(m.group(1)) * 1000 / int(m.group(2)))
                scan.append(float(SCAN.search(out).group(1)) * 1000 / (nodes * nodes * 8))
                m = SLOTS.search(out)
                slots.append(float(m.group(1)) * 1000 / int(m.group(2)))
                m = DEFERRED.search(out)
                planned_build.append(float(m.group(1)) * 1000 / nodes)
                deferred.append(float(m.group(2)) * 1000 / nodes)
    big = [lv for lv in levels if lv[1] >= 4]
    sizes = [lv[1] for lv in levels]
    nbytes = [lv[0] for lv in levels]
    mx, my = statistics.mean(sizes), statistics.mean(nbytes)
    slope = sum((x - mx) * (y - my) for x, y in zip(sizes, nbytes)) / sum((x - mx) ** 2 for x in sizes)
    tree = {
        "tree_verify_us": statistics.median(lv[3] for lv in levels) * 1000,
        "tree_parse_us_per_node": sum(lv[2] * 1000 for lv in big) / sum(lv[1] for lv in big),
        "tree_expand_us": statistics.median(lv[4] for lv in levels) * 1000,
        "tree_bytes_per_node": slope,
        "tree_bytes_common": my - slope * mx,
        "tree_build_us_per_node": statistics.median(build),
        "tree_build_ondemand_us_per_node": statistics.median(ondemand),
        "rank_scan_us_per_node_rank": statistics.median(scan),
        "plan_us_per_rank": statistics.median(plan),
        "plan_slots_us_per_rank": statistics.median(slots),
        "tree_build_planned_us_per_node": statistics.median(planned_build),
        "tree_build_deferred_us_per_node": statistics.median(deferred),
        "levels_measured": len(levels),
        "load": open("/proc/loadavg").read().split()[:3],
    }
    with open(args.costs) as f:
        costs = json.load(f)
    costs["tree"] = tree
    with open(args.costs, "w") as f:
        json.dump(costs, f, indent=1)
        f.write("\n")
    print(json.dumps(tree, indent=1))


if __name__ == "__main__":
    main()
