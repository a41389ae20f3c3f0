#!/usr/bin/python3
"""Regenerates golden/*.txt from DeepSpeed's own estimator source (not copied: the functions are
read from a DeepSpeed checkout with ast and evaluated with OffloadDeviceEnum stubbed as DeepSpeed
defines it, so torch is not needed).

usage: gen_golden.py [DEEPSPEED_ROOT]   (a DeepSpeed source checkout); run with Python >= 3.11.
Writes golden/rows.txt (one line per formula call) and golden/table_*.txt (the printed tables)."""
import ast, contextlib, enum, io, os, sys

root = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))


class OffloadDeviceEnum(str, enum.Enum):
    none = "none"
    cpu = "cpu"
    nvme = "nvme"


def load(rel, names):
    path = os.path.join(root, rel)
    tree = ast.parse(open(path).read())
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    ns = {"OffloadDeviceEnum": OffloadDeviceEnum}
    exec(compile(ast.Module(body=body, type_ignores=[]), path, "exec"), ns)
    return ns


z2 = load("deepspeed/runtime/zero/stage_1_and_2.py",
          {"estimate_zero2_model_states_mem_needs", "estimate_zero2_model_states_mem_needs_all_cold"})
z3 = load("deepspeed/runtime/zero/stage3.py",
          {"estimate_zero3_model_states_mem_needs", "estimate_zero3_model_states_mem_needs_all_cold"})

# (total_params, largest_layer_params, num_gpus_per_node, num_nodes, additional_buffer_factor)
CASES = [(1, 0, 1, 1, 1.5), (125_000_000, 10_000_000, 1, 1, 1.5), (1_300_000_000, 52_000_000, 8, 1, 1.5),
         (2_851_024_896, 32_000_000, 8, 4, 1.5), (6_700_000_000, 200_000_000, 4, 2, 1.0),
         (175_000_000_000, 1_000_000_000, 8, 64, 1.5), (999_999, 1_234, 3, 3, 1.25), (7, 3, 2, 5, 2.0),
         (60_506_624, 16_449_536, 1, 1, 1.5)]

rows = []
for i, (tp, lp, g, n, f) in enumerate(CASES):
    for off in (True, False):
        c, gm = z2["estimate_zero2_model_states_mem_needs"](tp, g, n, off, f)
        rows.append(f"2 {tp} {lp} {g} {n} {f!r} {int(off)} 0 0 {c} {gm}")
    for off in (True, False):
        for offp in (True, False):
            for zi in (True, False):
                c, gm, _ = z3["estimate_zero3_model_states_mem_needs"](tp, lp, g, n, off, offp, zi, f)
                rows.append(f"3 {tp} {lp} {g} {n} {f!r} {int(off)} {int(offp)} {int(zi)} {c} {gm}")
    for stage in (2, 3):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            if stage == 2:
                z2["estimate_zero2_model_states_mem_needs_all_cold"](tp, g, n, f)
            else:
                z3["estimate_zero3_model_states_mem_needs_all_cold"](tp, lp, g, n, f)
        with open(os.path.join(here, f"table_{i}_zero{stage}.txt"), "w") as out:
            out.write(f"# {tp} {lp} {g} {n} {f!r}\n" + buf.getvalue())
with open(os.path.join(here, "rows.txt"), "w") as out:
    out.write("# stage total largest gpus_per_node nodes factor offload offload_param zero_init cpu_bytes gpu_bytes\n")
    out.write("\n".join(rows) + "\n")
