#!/usr/bin/env python3
"""The table at the end of scripts/gpu_check.sh: each step's status, each GPU test case's outcome (from
pytest's JUnit XML) and the benchmark's rows (bench/gpu_step_time.py's JSON lines) with the offload rows
against their floor, read from OUT.
Usage: gpu_summary.py OUT"""

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from gpu_step_time import overlap_table, table  # noqa: E402


def steps(out):
    path = out / "steps.tsv"
    if not path.exists():
        return ["(no steps.tsv)"]
    rows = [line.split("\t") for line in path.read_text().splitlines() if line]
    return [f"  {name:<10} {status:<20} {secs:>4} s" for name, status, secs in rows]


def tests(out):
    path = out / "tests_gpu.xml"
    if not path.exists():
        return from_log(out / "tests.log")
    counts, lines = {"passed": 0, "failed": 0, "skipped": 0}, []
    for case in ET.parse(path).iter("testcase"):
        name = f"{case.get('classname', '').split('.')[-1]}::{case.get('name')}"
        outcome, detail = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = "skipped" if tag == "skipped" else "failed"
                detail = (node.get("message") or "").splitlines()[0][:100] if node.get("message") else ""
        counts[outcome] += 1
        lines.append(f"  {outcome.upper():<8} {name}" + (f"  ({detail})" if detail else ""))
    return lines, counts


def from_log(path):
    """pytest -v's `file::test PASSED` lines: what is left when its timeout killed it before the XML."""
    if not path.exists():
        return ["  (no tests_gpu.xml and no tests.log: the tests did not run)"], {}
    counts, lines = {"passed": 0, "failed": 0, "skipped": 0}, ["  (no tests_gpu.xml: from tests.log)"]
    for line in path.read_text(errors="replace").splitlines():
        words = line.split()
        if len(words) >= 2 and "::" in words[0] and words[1] in ("PASSED", "FAILED", "ERROR", "SKIPPED"):
            outcome = {"PASSED": "passed", "SKIPPED": "skipped"}.get(words[1], "failed")
            counts[outcome] += 1
            lines.append(f"  {outcome.upper():<8} {words[0].split('/')[-1]}")
    return lines, counts


def bench(out):
    path = out / "bench.jsonl"
    if not path.exists():
        return "  (no bench.jsonl: the benchmark did not run)"
    results = [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]
    overlap = overlap_table(results)
    # The offload rows against max(copy, CPU Adam): how well the piece pipeline overlaps (docs/gpu.md).
    return table(results) + ("\n\n" + overlap if overlap else "")


def main():
    out = Path(sys.argv[1])
    print("== gpu_check steps (status, seconds)")
    print("\n".join(steps(out)))
    lines, counts = tests(out)
    print(f"== tests/gpu: {counts.get('passed', 0)} passed, {counts.get('failed', 0)} failed, "
          f"{counts.get('skipped', 0)} skipped")
    print("\n".join(lines))
    print("== bench/gpu_step_time.py (ratios to torch AMP bf16 + fused AdamW)")
    print(bench(out))


if __name__ == "__main__":
    main()
