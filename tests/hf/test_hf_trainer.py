"""Hugging Face Trainer and Accelerate, unchanged, on dsrt (the `deepspeed` compatibility distribution) and on
real DeepSpeed, 2 ranks on CPU/Gloo (docs/hf.md).

The interpreter running this file has transformers, accelerate, dsrt and python/deepspeed_compat (no DeepSpeed);
DSRUN_HF_PEER_PYTHON has the same transformers and accelerate with real DeepSpeed. dsrt's ranks start with the
dsrun installed beside this interpreter (`deepspeed` is dsrun too); DeepSpeed's with torchrun, as in
tests/deepspeed_peer. A missing peer or library fails, it never skips.

Tolerance: per-step losses agree within 2e-5 relative. Both runs are fp32 with the same model, data, Trainer
AdamW (DeepSpeed steps torch's AdamW on its partitions, dsrt its C++ AdamW with the same formula) and linear
schedule; what differs is float rounding: the order in which gradients are summed (DeepSpeed's buckets vs dsrt's)
and the AdamW kernel's operation order, each ~1e-7 relative per step, which Adam's normalised update and 4 steps
at lr 1e-2 amplify to ~1e-6 on the loss (tests/deepspeed_peer uses the same bound for the same reason).
The trained weights (the saved models) agree within 1e-4 absolute: observed ~4e-6 after 4 steps; Adam divides each
gradient by its own running RMS, so an element whose gradient nearly cancels can turn rounding noise into a
visible part of its lr-sized (1e-2) step, and the bound leaves room for that without letting a wrong update (a
missed or doubled step moves weights by ~1e-2) pass. Resumed losses and saved-vs-live weights are dsrt against
dsrt, so they must match exactly (resume restores the same bytes; the saved file is the live fp32 weights).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PEER_PYTHON = os.environ.get("DSRUN_HF_PEER_PYTHON")
DSRUN = Path(sys.executable).parent / "dsrun"
TOL = 2e-5
CONFIGS = ["zero0", "zero2", "zero3", "zero2_offload"]


def _env(**extra):
    # DSRUN_PYTHON: the ranks run with this interpreter, as DeepSpeed's launcher runs them with its own.
    path = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p)
    return dict(os.environ, OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1",
                TRANSFORMERS_NO_ADVISORY_WARNINGS="1", PYTHONPATH=path, DSRUN_PYTHON=sys.executable, **extra)


def _fail(cmd, proc):
    pytest.fail(f"{' '.join(map(str, cmd))} exited {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}\n"
                f"--- stderr\n{proc.stderr[-6000:]}")


def _run(cmd, env, timeout=900):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, cwd=HERE)
    if proc.returncode != 0:
        _fail(cmd, proc)
    return proc


def _run_peer(cmd, env, outputs):
    # Real DeepSpeed's side is the reference, not what is tested: one of its ranks has been seen to abort
    # ("terminate called without an active exception", SIGABRT, seen once, 2026-11-27, on torch 2.15 / DeepSpeed
    # 0.19.8). Only a reference rank killed by a signal gets one more run, from scratch (its outputs removed);
    # any other failure, or a second one, fails the test.
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, cwd=HERE)
    if proc.returncode == 0:
        return proc
    if "Signal " not in proc.stderr or "received by PID" not in proc.stderr:
        _fail(cmd, proc)
    print(f"real DeepSpeed's run lost a rank to a signal; running it once more:\n{proc.stderr[-3000:]}",
          file=sys.stderr)
    for path in map(Path, outputs):
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    return _run(cmd, env)


def _results(path):
    return {r["config"]: r for r in map(json.loads, Path(path).read_text().splitlines())}


def _close(got, want, what):
    assert got.keys() == want.keys(), f"{what}: steps {sorted(got)} vs {sorted(want)}"
    for step in want:
        g, w = got[step], want[step]
        assert abs(g - w) <= TOL * abs(w), f"{what} step {step}: {g!r} vs {w!r} (rel tolerance {TOL})"


def _close_weights(ours, theirs, name):
    from transformers import GPT2LMHeadModel
    a, b = (GPT2LMHeadModel.from_pretrained(d).state_dict() for d in (ours, theirs))
    assert a.keys() == b.keys()
    for k in a:
        diff = (a[k].float() - b[k].float()).abs().max().item()
        assert diff <= 1e-4, f"{name}: saved weight {k} differs from DeepSpeed's by {diff}"


@pytest.fixture(scope="module")
def peer_python():
    if not PEER_PYTHON:
        pytest.fail("DSRUN_HF_PEER_PYTHON is not set: the interpreter with real DeepSpeed, transformers and "
                    "accelerate (scripts/setup_torch2_env.sh makes it)")
    return PEER_PYTHON


def test_the_compat_distribution_is_what_hugging_face_detects():
    import importlib.metadata

    import deepspeed
    from accelerate.utils import compare_versions, is_deepspeed_available
    from transformers.integrations.deepspeed import is_deepspeed_available as hf_available

    import dsrt
    assert is_deepspeed_available() and hf_available()
    assert importlib.metadata.version("deepspeed") == "0.14.4+dsrt"
    # Accelerate calls engine.compile() from 0.14.4 on (dsrt has it) and offers "nossh" from 0.14.5 (dsrun lacks it).
    assert compare_versions("deepspeed", ">=", "0.14.4") and not compare_versions("deepspeed", ">=", "0.14.5")
    assert deepspeed.initialize is dsrt.initialize and deepspeed.zero is dsrt.zero
    from deepspeed.launcher.runner import DEEPSPEED_ENVIRONMENT_NAME
    from deepspeed.runtime.lr_schedules import VALID_LR_SCHEDULES
    from deepspeed.utils import logger
    assert DEEPSPEED_ENVIRONMENT_NAME == ".deepspeed_env" and "WarmupLR" in VALID_LR_SCHEDULES
    assert logger.name == "DeepSpeed"
    proc = subprocess.run([Path(sys.executable).parent / "deepspeed", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "dsrun" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_import_refuses_real_deepspeed_beside_the_compat_distribution(tmp_path):
    # DeepSpeed's dist-info visible on sys.path (another site directory, PYTHONPATH): import must fail, naming it.
    info = tmp_path / "deepspeed-0.19.8.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: deepspeed\nVersion: 0.19.8\n")
    proc = subprocess.run([sys.executable, "-c", "import deepspeed"], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])))
    assert proc.returncode != 0
    assert "DeepSpeed 0.19.8 is installed beside the dsrt compatibility package" in proc.stderr, proc.stderr[-2000:]
    assert str(info) in proc.stderr


def test_trainer_losses_resume_save_and_evaluate_match_real_deepspeed(tmp_path, peer_python):
    ours, theirs = tmp_path / "dsrt.jsonl", tmp_path / "deepspeed.jsonl"
    _run([DSRUN, "--num_gpus", "2", "--master_port", "29671", HERE / "hf_trainer_run.py", "--out", ours,
          "--root", tmp_path / "dsrt", *CONFIGS], _env())
    _run_peer([peer_python, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29672",
               HERE / "hf_trainer_run.py", "--out", theirs, "--root", tmp_path / "ds", *CONFIGS],
              _env(DS_ACCELERATOR="cpu"), [theirs, tmp_path / "ds"])
    got, want = _results(ours), _results(theirs)
    for name in CONFIGS:
        g, w = got[name], want[name]
        assert g["deepspeed"] == "0.14.4" and w["deepspeed"] != "0.14.4", (g["deepspeed"], w["deepspeed"])
        assert sorted(map(int, g["losses"])) == [1, 2, 3, 4], g
        _close(g["losses"], w["losses"], f"{name}: loss")
        _close(g["resumed"], w["resumed"], f"{name}: resumed loss")
        _close(g["resumed"], {s: g["losses"][s] for s in g["resumed"]}, f"{name}: resumed vs uninterrupted")
        assert abs(g["eval_loss"] - w["eval_loss"]) <= TOL * abs(w["eval_loss"]), (name, g["eval_loss"], w["eval_loss"])
        assert g["saved_max_diff"] == 0.0 and g["saved_keys"] == w["saved_keys"], (name, g, w)
        assert g["zero_init_broadcast_sum"] == w["zero_init_broadcast_sum"] == 120.0, (g, w)  # sum(0..15)
        assert g["moved"] > 1e-3, f"{name}: the weights did not train ({g['moved']})"
        _close_weights(tmp_path / "dsrt" / name / "final", tmp_path / "ds" / name / "final", name)


def test_accelerate_launch_with_a_deepspeed_plugin_matches_real_deepspeed(tmp_path, peer_python):
    # ZeRO-3 only (get_state_dict's gathered 16-bit state dict): each `accelerate launch` costs ~80 s here, and
    # the Trainer test above drives the same Accelerate calls (DeepSpeedEngineWrapper, prepare, get_state_dict)
    # at stages 0, 2, 3 and 2 + offload. ZeRO-2 + offload here (Accelerate's DeepSpeedCPUAdam mapping) passed too
    # when run by hand.
    variants = {"3": ["--zero_stage", "3", "--zero3_save_16bit_model", "true"]}
    results = {}
    for impl, python in (("dsrt", sys.executable), ("deepspeed", peer_python)):
        out = tmp_path / f"{impl}.jsonl"
        for stage, flags in variants.items():
            launch = [python, "-m", "accelerate.commands.launch", "--use_deepspeed", "--num_processes", "2",
                      "--num_machines", "1", "--main_process_port", "29673", *flags,
                      "--gradient_accumulation_steps", "2", "--gradient_clipping", "1.0", "--mixed_precision", "no",
                      HERE / "accelerate_run.py", "--out", out, "--save", tmp_path / f"{impl}-{stage}.pt"]
            if impl == "deepspeed":
                _run_peer(launch, _env(DS_ACCELERATOR="cpu"), [out, tmp_path / f"{impl}-{stage}.pt"])
            else:
                _run(launch, _env())
        results[impl] = _results(out)
    import torch
    for stage in variants:
        g, w = results["dsrt"][stage], results["deepspeed"][stage]
        assert g["deepspeed"] == "0.14.4" and w["deepspeed"] != "0.14.4"
        assert len(g["losses"]) == 4 and g["global_steps"] == w["global_steps"] == 4, (g, w)
        _close(dict(enumerate(g["losses"])), dict(enumerate(w["losses"])), f"accelerate zero {stage}: loss")
        assert not g["missing"] and g["state_keys"] == w["state_keys"], (g, w)
        assert g["moved"] > 1e-3, f"accelerate zero {stage}: the weights did not train ({g['moved']})"
        ours, theirs = (torch.load(tmp_path / f"{i}-{stage}.pt") for i in ("dsrt", "deepspeed"))
        for k in theirs:
            diff = (ours[k] - theirs[k]).abs().max().item()
            assert diff <= 1e-4, f"accelerate zero {stage}: weight {k} differs from DeepSpeed's by {diff}"


COMPILE_RUN = """
import json, os, sys, torch
from accelerate import Accelerator, PartialState
from accelerate.utils import DeepSpeedPlugin, set_seed
set_seed(0)
PartialState(cpu=True)
acc = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=int(sys.argv[1]), gradient_accumulation_steps=1),
                  dynamo_backend=sys.argv[2])
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
loader = torch.utils.data.DataLoader(torch.randn(8, 8, generator=torch.Generator().manual_seed(1)), batch_size=2)
model, opt, loader = acc.prepare(model, opt, loader)
losses = []
for x in loader:
    loss = model(x).pow(2).mean(); acc.backward(loss); opt.step(); opt.zero_grad(); losses.append(loss.item())
print(json.dumps({"compiled": model.is_compiled, "losses": losses}))
"""


@pytest.mark.parametrize("stage", ["2", "3"])
def test_accelerate_with_a_dynamo_backend_compiles_the_engine_and_trains_as_eager(stage):
    """From DeepSpeed 0.14.4 on (the compat distribution's version) Accelerate calls engine.compile() when a
    dynamo backend is configured; one process, aot_eager (no C++ compile), the losses of the eager run."""
    runs = {}
    for backend in ("no", "aot_eager"):
        env = _env(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT="29674")
        proc = _run([sys.executable, "-c", COMPILE_RUN, stage, backend], env)
        runs[backend] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert runs["aot_eager"]["compiled"] and not runs["no"]["compiled"], runs
    assert runs["aot_eager"]["losses"] == runs["no"]["losses"] and len(runs["no"]["losses"]) == 4, runs
