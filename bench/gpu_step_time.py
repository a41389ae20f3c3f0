#!/usr/bin/env python3
"""Step time and peak memory of one training step on one GPU (world size 1): plain torch (fp32, AMP bf16),
FSDP2, real DeepSpeed (stages 0-3, offload) and dsrt (stages 0-3 x fp32/bf16/fp16 x offload), on a
GPT-style model of ~110 M parameters (batch 8 x 512 tokens; --large: ~1.1 B).

Each case runs in its own process (a crash or an out-of-memory ends that case only) under a timeout and
prints one JSON line; the step time is the median of --steps steps after --warmup, with
torch.cuda.synchronize() around each; peak memory is torch.cuda.max_memory_allocated() of that process
(device memory only: what offload keeps in host memory is not in it). The table at the end gives each
case's ratio to torch AMP bf16 + fused AdamW. A case that cannot run says why (DeepSpeed not installed,
torch without FSDP2, out of budget) on its line instead of being left out.

  python bench/gpu_step_time.py --out results.jsonl                 # on the GPU machine (gpu_check.sh)
  python bench/gpu_step_time.py --device cpu --tiny --steps 2       # the harness, here on the CPU
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASELINE = "torch_amp_bf16"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--tiny", action="store_true", help="the tiny model (harness check on the CPU)")
    p.add_argument("--large", action="store_true", help="the ~1.1 B model instead of ~110 M")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--cases", default=None, help="comma-separated case names (default: all)")
    p.add_argument("--no-dsrt", action="store_true", help="leave the dsrt cases out (no build)")
    p.add_argument("--case-timeout", type=float, default=120.0, help="seconds per case")
    p.add_argument("--budget", type=float, default=600.0, help="seconds for all cases; the rest are not run")
    p.add_argument("--out", default=None, help="append the JSON lines to this file too")
    p.add_argument("--run-case", default=None, help=argparse.SUPPRESS)  # the child's side
    return p.parse_args()


def deepspeed_available():
    """'' when `import deepspeed` works in a child (importing it here would slow every case), else why not."""
    proc = subprocess.run([sys.executable, "-c", "import deepspeed; print(deepspeed.__version__)"],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode == 0:
        return ""
    last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return f"import deepspeed failed: {last}"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_child(name, args, size, timeout):
    """Runs one case in a fresh process; its JSON result, or one that says how it failed."""
    # dsrt's CPU Adam alone runs on a CPU engine: no GPU visible, so its process group is Gloo.
    device = "cpu" if name == "floor_cpu_adam" else args.device
    cmd = [sys.executable, __file__, "--run-case", name, "--device", device, "--warmup", str(args.warmup),
           "--steps", str(args.steps)] + (["--tiny"] if args.tiny else []) + (["--large"] if args.large else [])
    # A world of one for the engines and FSDP2 (torch's env:// rendezvous, DeepSpeed's init_distributed).
    env = dict(os.environ, RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1",
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    if name == "floor_cpu_adam":
        env["CUDA_VISIBLE_DEVICES"] = ""
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return {"case": name, "ok": False, "error": f"timed out after {timeout:.0f} s",
                "stderr_tail": err[-2000:]}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            result = json.loads(line)
            result["wall_s"] = round(time.monotonic() - t0, 1)
            return result
    err = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    why = "out of memory" if "OutOfMemoryError" in proc.stderr else (err[-1] if err else "no output")
    return {"case": name, "ok": False, "error": f"exit {proc.returncode}: {why[-300:]}",
            "stderr_tail": "\n".join(err[-15:])[-2000:]}


def child(args, size):
    """The --run-case side: one JSON line on stdout, or the traceback on stderr and a failing exit."""
    sys.path.insert(0, str(HERE))
    import gpu_bench_cases
    result = gpu_bench_cases.run_case(args.run_case, size, args.device, args.warmup, args.steps)
    print(json.dumps(result), flush=True)


def table(results):
    """The summary: one row per case, ratios to the torch AMP bf16 baseline where both ran."""
    base = next((r for r in results if r["case"] == BASELINE and r.get("ok")), None)
    rows = [f"{'case':<24} {'ms/step':>9} {'x bf16':>7} {'peak GiB':>9} {'x bf16':>7}  note"]
    for r in results:
        if not r.get("ok"):
            rows.append(f"{r['case']:<24} {'-':>9} {'-':>7} {'-':>9} {'-':>7}  {r.get('error', '')[:90]}")
            continue
        peak = r.get("peak_gib", r.get("peak_rss_gib"))
        bpeak = base and base.get("peak_gib", base.get("peak_rss_gib"))
        ratio_t = f"{r['step_ms'] / base['step_ms']:.2f}" if base else "-"
        ratio_m = f"{peak / bpeak:.2f}" if base and bpeak else "-"
        note = r.get("optimizer", "") + (f", {r['skipped_steps']} skipped" if r.get("skipped_steps") else "")
        rows.append(f"{r['case']:<24} {r['step_ms']:>9.2f} {ratio_t:>7} {peak:>9.3f} {ratio_m:>7}  {note}")
    return "\n".join(rows)


def overlap_table(results):
    """Each offload case against its floor, max(copy time, CPU Adam time) over the same parameter count: how
    close the piece pipeline comes to overlapping the copies with CPU Adam (1.00 = fully)."""
    by_name = {r["case"]: r for r in results if r.get("ok")}
    adam = by_name.get("floor_cpu_adam")
    rows = []
    for r in results:
        name = r["case"]
        if not (name.startswith("dsrt_") and "_off" in name and r.get("ok")):
            continue
        dtype = name.split("_")[2]
        copy = by_name.get(f"floor_copy_{dtype}")
        if not (copy and adam):
            rows.append(f"{name:<24} {r['step_ms']:>9.2f}  floor not measured (floor_copy_{dtype}, floor_cpu_adam)")
            continue
        floor = max(copy["step_ms"], adam["step_ms"])
        # What offloading adds to the same stage and dtype on the device: the part the floor bounds.
        plain = by_name.get(name.rsplit("_", 1)[0])
        extra = f"{r['step_ms'] - plain['step_ms']:>9.2f} {(r['step_ms'] - plain['step_ms']) / floor:>7.2f}" \
            if plain else f"{'-':>9} {'-':>7}"
        rows.append(f"{name:<24} {r['step_ms']:>9.2f} {copy['step_ms']:>9.2f} {adam['step_ms']:>9.2f} "
                    f"{floor:>9.2f} {r['step_ms'] / floor:>7.2f} {extra}")
    if not rows:
        return ""
    head = (f"{'offload case':<24} {'ms/step':>9} {'copy ms':>9} {'adam ms':>9} {'floor ms':>9} {'x floor':>7} "
            f"{'+ms':>9} {'+x floor':>7}  (+: over the same stage without offload)")
    return "\n".join([head] + rows)


def main():
    args = parse_args()
    size = "tiny" if args.tiny else ("large" if args.large else "base")
    if args.run_case:
        return child(args, size)
    sys.path.insert(0, str(HERE))
    import gpu_bench_cases
    no_ds = deepspeed_available()
    names = args.cases.split(",") if args.cases else gpu_bench_cases.case_names(dsrt=not args.no_dsrt)
    out = open(args.out, "a") if args.out else None
    start, results = time.monotonic(), []
    print(f"gpu_step_time: {len(names)} cases, model '{size}', device {args.device}, budget {args.budget:.0f} s",
          flush=True)
    for name in names:
        left = args.budget - (time.monotonic() - start)
        if name.startswith("ds_") and no_ds:
            result = {"case": name, "ok": False, "error": f"DeepSpeed not available: {no_ds}"}
        elif left < 15:
            result = {"case": name, "ok": False,
                      "error": f"not run: {left:.0f} s of the {args.budget:.0f} s budget left"}
        else:
            result = run_child(name, args, size, min(args.case_timeout, left))
        results.append(result)
        line = json.dumps(result)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()
    print("\n" + table(results), flush=True)
    overlap = overlap_table(results)
    if overlap:
        print("\n" + overlap, flush=True)
    # Failing when the baseline was asked for and did not run: without it there is no comparison.
    base_ok = any(r["case"] == BASELINE and r.get("ok") for r in results)
    return 0 if base_ok or BASELINE not in names else 1


if __name__ == "__main__":
    sys.exit(main())
