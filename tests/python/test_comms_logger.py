"""The comms_logger block and deepspeed.comm.log_summary(): in one process (a world of one) every collective
issued through dsrt.comm is counted with its message bytes, in DeepSpeed's table, and the bandwidth formulas
equal DeepSpeed's calc_bw_log (compared where deepspeed is installed); on two ranks the engine's own
collectives (libdsrt's, not issued through dsrt.comm) are counted under deepspeed.comm's names and sizes."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import dsrt
from dsrt import comm
from dsrt.utils.comms_logging import calc_bw_log, convert_size

from conftest import free_port


@pytest.fixture
def logging_engine():
    model = torch.nn.Linear(4, 2)
    engine, *_ = dsrt.initialize(model=model, model_parameters=model.parameters(),
                                 config={"train_batch_size": 1, "optimizer": {"type": "Adam", "params": {"lr": 0.1}},
                                         "comms_logger": {"enabled": True}})
    comm.reset_log()
    yield engine
    comm.configure_comms_logger({})
    comm.reset_log()


def test_every_collective_is_counted_with_its_bytes(logging_engine, capsys):
    for _ in range(3):
        comm.all_reduce(torch.ones(256))                 # 1 KiB of fp32
    comm.all_reduce(torch.ones(8, dtype=torch.float64))  # another size: its own row
    comm.broadcast(torch.zeros(16), src=0)
    comm.all_gather([torch.zeros(32)], torch.ones(32))  # torch 1.13's Gloo has no all_gather_into_tensor
    stats = comm.log_summary(return_dict=True)["summary"]
    assert stats["all_reduce"][1024]["count"] == 3
    assert stats["all_reduce"][64]["count"] == 1
    assert stats["broadcast"][64]["count"] == 1
    assert stats["all_gather"][128]["count"] == 1
    assert stats["log_summary_barrier"][0]["count"] == 1  # DeepSpeed logs its own first barrier too
    row = stats["all_reduce"][1024]
    assert row["total_latency_ms"] >= row["avg_latency_ms"] >= 0 and row["msg_size_str"] == "1.0 KB"
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].split() == ["Comm.", "Op", "Message", "Size", "Count", "Total", "Latency(ms)", "Avg",
                                  "Latency(ms)", "tput_avg", "(Gbps)", "busbw_avg", "(Gbps)"]
    assert "all_reduce" in printed and printed[printed.index("all_reduce") + 1].split()[:3] == ["64.0", "B", "1"]


def test_prof_all_false_counts_only_the_named_ops(logging_engine):
    comm.configure_comms_logger({"enabled": True, "prof_all": False, "prof_ops": ["broadcast"]})
    comm.all_reduce(torch.ones(4))
    comm.broadcast(torch.ones(4), src=0)
    comm.all_reduce(torch.ones(4), prof=True)
    stats = comm.log_summary(return_dict=True)["summary"]
    assert sorted(stats) == ["all_reduce", "broadcast"]
    assert stats["all_reduce"][16]["count"] == 1


def test_without_the_block_nothing_is_recorded():
    comm.configure_comms_logger({})
    comm.reset_log()
    comm.all_reduce(torch.ones(4))
    assert comm.comms_logger.comms_dict == {}


def test_bandwidth_formulas_are_deepspeeds(monkeypatch):
    if importlib.util.find_spec("deepspeed") is None:
        pytest.skip("deepspeed is not installed in this interpreter: no reference calc_bw_log")
    import deepspeed.comm
    from deepspeed.utils.comms_logging import calc_bw_log as reference
    for world in (1, 2, 8):
        monkeypatch.setattr(deepspeed.comm, "get_world_size", lambda *a, **k: world)
        for op in ("all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor", "broadcast",
                   "all_to_all_single", "barrier", "reduce"):
            assert calc_bw_log(op, 3 << 20, 2.5, world) == pytest.approx(reference(op, 3 << 20, 2.5)), (op, world)


def test_sizes_print_as_deepspeeds():
    assert [convert_size(n) for n in (0, 1, 1024, 1536, 3 << 20)] == ["0B", "1.0 B", "1.0 KB", "1.5 KB", "3.0 MB"]


def test_configure_switches_the_logger_as_deepspeeds_does():
    comm.configure({"comms_logger": {"enabled": True, "prof_all": False}}, prof_ops=["barrier"])
    try:
        assert comm.comms_logger.enabled and not comm.comms_logger.prof_all
        assert comm.comms_logger.wants("barrier") and not comm.comms_logger.wants("all_reduce")
    finally:
        comm.configure_comms_logger({})


def _two_rank_summaries(stages):
    """Runs comms_logger_worker.py on two ranks (plain processes on one TCPStore) and returns rank 0's
    {stage: result} lines."""
    port = free_port()
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, str(Path(__file__).with_name("comms_logger_worker.py")),
                                       *map(str, stages)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, env=env))
    try:
        outputs = [p.communicate(timeout=240) for p in procs]
    finally:
        for p in procs:  # a rank left waiting for a failed peer must not outlive the test
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0, f"rank exited {p.returncode}\n--- stdout\n{out[-3000:]}\n--- stderr\n{err[-3000:]}"
    results = [json.loads(line[len("RESULT "):]) for line in outputs[0][0].splitlines() if line.startswith("RESULT ")]
    return {r["stage"]: r for r in results}


def test_the_engines_own_collectives_are_counted_with_deepspeeds_names_and_bytes():
    # Two optimizer steps on two ranks, fp32, gradient_clipping on, default bucket sizes (one bucket, one
    # all-gather shard for this model). What each stage issues, per step: stage 0 one all_reduce of every
    # gradient; ZeRO 1 and 2 one reduce_scatter_tensor of every gradient (input bytes, as deepspeed.comm
    # counts them), the 8-byte all_reduce of the squared gradient norm and one all_gather_into_tensor of this
    # rank's half of the parameters; ZeRO 3 the same reduce_scatter and norm, its parameter gathers before
    # each use. Every stage starts with rank 0's parameters broadcast once.
    results = _two_rank_summaries([0, 1, 2, 3])
    assert sorted(results) == [0, 1, 2, 3], results
    steps = 2
    for stage, r in results.items():
        grads = 4 * r["params"]  # fp32
        s = r["summary"]
        assert r["latencies_ok"], r
        assert s["broadcast"] == {str(grads): 1}, r
        if stage == 0:
            assert s["all_reduce"] == {str(grads): steps}, r
            assert "reduce_scatter_tensor" not in s and "all_gather_into_tensor" not in s, r
            continue
        assert s["reduce_scatter_tensor"] == {str(grads): steps}, r
        assert s["all_reduce"] == {"8": steps}, r
        gathers = s["all_gather_into_tensor"]
        if stage < 3:
            assert gathers == {str(grads // 2): steps}, r
        else:
            # Each gather moves this rank's share of some layers: never more than half of all parameters.
            assert all(0 < int(size) <= grads // 2 for size in gathers) and sum(gathers.values()) >= steps, r
