"""2 ranks of dsrt sharing one GPU over Gloo: either they train (and match one process on the global batch),
or initialize refuses with one clear message naming the backend, the device and a remedy. Nothing else
passes: no abort (SIGABRT), no other exception, no hang (a timeout). NCCL cannot put two ranks on one device,
so its 2-rank case runs only where there are 2 GPUs."""

import json
import os
import socket
import subprocess
import sys

import pytest

from gpu_support import require_gpu

require_gpu()

import torch  # noqa: E402

from gpu_support import DEVICE_TYPE, HERE, MICRO, assert_close, torch_reference, worker_losses  # noqa: E402

STEPS = 4
TIMEOUT = 90
REFUSED_RC = 3


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn_two_ranks(backend, stage, offload="none", reduce_bucket_size=0):
    """Starts both ranks, waits (killing both after TIMEOUT: a hang fails the test); [(rc, out, err)]."""
    port = free_port()
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", LOCAL_WORLD_SIZE="2",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))
        cmd = [sys.executable, str(HERE / "two_rank_worker.py"), "--backend", backend, "--stage", str(stage),
               "--steps", str(STEPS), "--offload", offload, "--reduce-bucket-size", str(reduce_bucket_size)]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=TIMEOUT)
            results.append((p.returncode, out, err))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        outs = [p.communicate() for p in procs]
        pytest.fail(f"2 ranks over {backend} (stage {stage}) hung: no exit within {TIMEOUT} s\n"
                    + "\n".join(f"--- rank {r} stdout\n{o[-2000:]}\n--- rank {r} stderr\n{e[-2000:]}"
                                for r, (o, e) in enumerate(outs)))
    return results


def describe(results):
    return "\n".join(f"--- rank {r}: exit {rc}\n--- stdout\n{out[-2500:]}\n--- stderr\n{err[-2500:]}"
                     for r, (rc, out, err) in enumerate(results))


def refusal_message(out):
    for line in out.splitlines():
        if line.startswith("REFUSED "):
            return json.loads(line[len("REFUSED "):])
    return None


def check_trained(results, backend, stage):
    got = worker_losses(results[0][1])
    want = torch_reference(STEPS, DEVICE_TYPE, rows=2 * MICRO)  # one process, the whole global batch
    assert_close([got.get(s) for s in range(STEPS)], want, 1e-5, f"2 ranks over {backend}, stage {stage}")


def check_refused(results, backend):
    messages = [refusal_message(out) for _, out, _ in results]
    assert all(messages), f"exit {REFUSED_RC} without a REFUSED line\n{describe(results)}"
    msg = messages[0]
    low = msg.lower()
    # One clear message (a hint line allowed, no C++ backtrace) naming backend, device and remedy.
    assert len(msg.strip().splitlines()) <= 2 and "frame #" not in msg, f"not one clear message: {msg!r}"
    assert backend in low, f"the refusal does not name the backend '{backend}': {msg!r}"
    assert "cuda" in low or "gpu" in low, f"the refusal does not name the device: {msg!r}"
    assert any(w in low for w in ("hint", "use ", "set ", "pass ", "instead")), f"no remedy in: {msg!r}"


@pytest.mark.parametrize("stage", [0, 2, 3])
def test_two_ranks_over_gloo_on_one_gpu_train_or_refuse_clearly(stage):
    results = spawn_two_ranks("gloo", stage)
    codes = [rc for rc, _, _ in results]
    if codes == [0, 0]:
        check_trained(results, "gloo", stage)
    elif codes == [REFUSED_RC, REFUSED_RC]:
        check_refused(results, "gloo")
    else:  # a signal (-6 is SIGABRT), a traceback, or one rank refusing while the other went on
        pytest.fail(f"2 ranks over gloo on one GPU, stage {stage}: neither trained nor refused cleanly "
                    f"(exit codes {codes})\n{describe(results)}")


# NCCL's layouts: each stage, and the offload ones (the piece pipeline on 2 ranks). Buckets of 500 elements
# lie inside one rank's partition or straddle two, so the reduce-scatter pads uneven runs (BucketReducer's
# kPaddedTensor); DeepSpeed's default bucket spans the whole model, whose runs are already even.
NCCL_LAYOUTS = [(0, "none", 0), (2, "none", 0), (3, "none", 0), (2, "none", 500), (3, "none", 500),
                (2, "optimizer", 500), (3, "both", 500)]


@pytest.mark.skipif(torch.cuda.device_count() < 2,
                    reason=f"NCCL refuses 2 ranks on one device and this machine has "
                           f"{torch.cuda.device_count()} GPU(s); the 2-rank NCCL case needs 2")
@pytest.mark.parametrize("stage,offload,bucket", NCCL_LAYOUTS,
                         ids=[f"stage{s}-{o}-bucket{b or 'default'}" for s, o, b in NCCL_LAYOUTS])
def test_two_ranks_over_nccl_on_two_gpus_match_one_process(stage, offload, bucket):
    results = spawn_two_ranks("nccl", stage, offload, bucket)
    assert [rc for rc, _, _ in results] == [0, 0], describe(results)
    check_trained(results, "nccl", stage)
