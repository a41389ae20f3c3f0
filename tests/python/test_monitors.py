"""The ds_config's monitor blocks in one process (a world of one): csv_monitor files in DeepSpeed's layout
(compared with DeepSpeed's own csvMonitor where deepspeed is installed), tensorboard event files read back
with TensorBoard's EventAccumulator, wandb offline runs, rank 0 only, and the messages for a missing
package. Writers whose package is absent are skipped with the reason (pytest -rs prints it)."""

import csv
import importlib.util
import subprocess
import sys

import pytest
import torch

import dsrt
from dsrt.monitor import MonitorMaster
from dsrt.monitor.config import monitor_config

GAS, MICRO = 2, 2
STEPS = 3
LR_SCHEDULE = {"type": "WarmupLR", "params": {"warmup_min_lr": 0.0, "warmup_max_lr": 0.01, "warmup_num_steps": 4}}


def have(package):
    return importlib.util.find_spec(package) is not None


def tiny_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def train(cfg, steps=STEPS, close=True):
    """Runs ``steps`` optimizer steps; returns the engine and DeepSpeed's expected events: the mean loss of
    each window at the samples before its step, the next lr at the samples after it."""
    model = tiny_model()
    engine, _, _, _ = dsrt.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    gen = torch.Generator().manual_seed(1)
    expected = {"Train/Samples/train_loss": [], "Train/Samples/lr": []}
    for _ in range(steps):
        window = []
        samples_before = engine.global_samples
        for _ in range(GAS):
            x = torch.randn(MICRO, 8, generator=gen).to(model[0].weight.dtype)  # fp16 converted the model
            loss = engine(x).float().pow(2).mean()
            window.append(loss.item())
            engine.backward(loss)
            engine.step()
        expected["Train/Samples/train_loss"].append((samples_before, sum(window) / GAS))
        expected["Train/Samples/lr"].append((engine.global_samples, engine.get_lr()[0]))
    if close:
        engine.monitor.close()
    return engine, expected


def config(**blocks):
    cfg = {"train_micro_batch_size_per_gpu": MICRO, "gradient_accumulation_steps": GAS,
           "optimizer": {"type": "Adam", "params": {"lr": 0.01}}, "scheduler": LR_SCHEDULE}
    cfg.update(blocks)
    return cfg


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_csv_monitor_writes_one_file_per_event_in_deepspeeds_layout(tmp_path):
    out = tmp_path / "csv"
    engine, expected = train(config(csv_monitor={"enabled": True, "output_path": str(out),
                                                           "job_name": "job"}))
    assert engine.monitor.enabled
    files = sorted(p.name for p in (out / "job").iterdir())
    assert files == ["Train_Samples_lr.csv", "Train_Samples_train_loss.csv"]
    for name, rows in expected.items():
        got = read_csv(out / "job" / (name.replace("/", "_") + ".csv"))
        assert got[0] == ["step", name.split("/")[-1]]
        assert [int(r[0]) for r in got[1:]] == [step for step, _ in rows]
        assert [float(r[1]) for r in got[1:]] == pytest.approx([v for _, v in rows], rel=1e-6)
    # The steps are global samples: the lr after step k is at k * train_batch_size.
    assert [s for s, _ in expected["Train/Samples/lr"]] == [GAS * MICRO * k for k in range(1, STEPS + 1)]


def test_csv_files_are_byte_for_byte_what_deepspeeds_csv_monitor_writes(tmp_path, monkeypatch):
    if not have("deepspeed"):
        pytest.skip("deepspeed is not installed in this interpreter: no reference csvMonitor to compare with")
    import deepspeed.comm
    from deepspeed.monitor.csv_monitor import csvMonitor
    monkeypatch.setattr(deepspeed.comm, "get_rank", lambda *a, **k: 0)
    events = [("Train/Samples/train_loss", 0.25, 0), ("Train/Samples/lr", 0.001, 4),
              ("Train/Samples/loss_scale", 256.0, 4), ("Train/Samples/lr", 0.002, 8)]
    block = {"enabled": True, "output_path": str(tmp_path / "ours"), "job_name": "j"}
    mine = MonitorMaster(monitor_config({"csv_monitor": block}, "t"), rank=0)
    ref = csvMonitor(monitor_config({"csv_monitor": dict(block, output_path=str(tmp_path / "theirs"))},
                                    "t").csv_monitor)
    for i in range(0, len(events), 2):
        mine.write_events(events[i:i + 2])
        ref.write_events(events[i:i + 2])
    names = sorted(p.name for p in (tmp_path / "theirs" / "j").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "ours" / "j").iterdir())
    for name in names:
        assert (tmp_path / "ours" / "j" / name).read_bytes() == (tmp_path / "theirs" / "j" / name).read_bytes()


def test_tensorboard_events_read_back_with_tensorboards_reader(tmp_path):
    if not have("tensorboard"):
        pytest.skip("tensorboard is not installed in this interpreter (pip install tensorboard)")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    out = tmp_path / "tb"
    _, expected = train(config(tensorboard={"enabled": True, "output_path": str(out), "job_name": "run"}))
    acc = EventAccumulator(str(out / "run"))
    acc.Reload()
    assert sorted(acc.Tags()["scalars"]) == sorted(expected)
    for name, rows in expected.items():
        scalars = acc.Scalars(name)
        assert [s.step for s in scalars] == [step for step, _ in rows]
        assert [s.value for s in scalars] == pytest.approx([v for _, v in rows], rel=1e-6)


def test_fp16_adds_the_loss_scale_at_each_boundary(tmp_path):
    half = torch.ones(1, 1, dtype=torch.half)
    try:
        torch.addmm(half, half, half)
    except RuntimeError as e:
        pytest.skip(f"this torch runs no float16 Linear on the CPU ({e}): the fp16 monitor events are checked "
                    "where it does (the torch 2 leg)")
    out = tmp_path / "csv"
    cfg = config(csv_monitor={"enabled": True, "output_path": str(out), "job_name": "j"},
                 fp16={"enabled": True, "initial_scale_power": 8})
    engine, expected = train(cfg, steps=2)
    rows = read_csv(out / "j" / "Train_Samples_loss_scale.csv")
    assert rows[0] == ["step", "loss_scale"]
    assert [int(r[0]) for r in rows[1:]] == [s for s, _ in expected["Train/Samples/lr"]]
    assert float(rows[-1][1]) == engine.cur_scale


def test_wandb_offline_run_logs_every_event_at_its_step(tmp_path, monkeypatch):
    if not have("wandb"):
        pytest.skip("wandb is not installed in this interpreter (pip install wandb)")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    engine, expected = train(config(wandb={"enabled": True, "project": "dsrt-test"}), close=False)
    # The run's summary as wandb's own core holds it: the latest value of each name in the committed rows
    # (a row is committed when a later step arrives, so the last lr is still pending).
    run = engine.monitor.wandb_monitor.run
    summary = dict(run.summary)
    last_loss_step, last_loss = expected["Train/Samples/train_loss"][-1]
    assert summary["_step"] == last_loss_step
    assert summary["Train/Samples/train_loss"] == pytest.approx(last_loss)
    assert summary["Train/Samples/lr"] == pytest.approx(dict(expected["Train/Samples/lr"])[last_loss_step])
    assert run.step == expected["Train/Samples/lr"][-1][0]
    engine.monitor.close()
    assert len(list(tmp_path.glob("wandb/offline-run-*/run-*.wandb"))) == 1  # written offline, no account


def test_only_rank_zero_writes(tmp_path):
    cfg = monitor_config({"csv_monitor": {"enabled": True, "output_path": str(tmp_path / "o"), "job_name": "j"}}, "t")
    other = MonitorMaster(cfg, rank=1)
    other.write_events([("Train/Samples/lr", 0.1, 4)])
    assert other.enabled and other.writers() == []
    assert not (tmp_path / "o").exists()


def test_disabled_and_absent_blocks_write_nothing_and_say_nothing(tmp_path, capfd, monkeypatch):
    monkeypatch.chdir(tmp_path)
    engine, _ = train(config(csv_monitor={"enabled": False, "output_path": "x"},
                             tensorboard={"output_path": "y"}, wandb={"enabled": False}), steps=1)
    assert not engine.monitor.enabled and engine.monitor.writers() == []
    assert list(tmp_path.iterdir()) == []
    err = capfd.readouterr().err
    for key in ("csv_monitor", "tensorboard", "wandb"):
        assert key not in err


def test_a_malformed_block_names_the_key(tmp_path):
    with pytest.raises(dsrt.DsrtError, match=r"<config dict>: csv_monitor.outputpath: unknown key"):
        train(config(csv_monitor={"enabled": True, "outputpath": "x"}), steps=1)


def test_a_missing_writer_package_is_named_with_its_pip_command(tmp_path):
    # A child interpreter in which neither package can be imported (sys.modules[name] = None).
    code = ("import sys; sys.modules['tensorboard'] = sys.modules['wandb'] = None\n"
            "import dsrt, torch\n"
            "for block in ('tensorboard', 'wandb'):\n"
            "    m = torch.nn.Linear(2, 2)\n"
            "    cfg = {'train_batch_size': 1, 'optimizer': {'type': 'Adam', 'params': {'lr': 0.1}},"
            " block: {'enabled': True}}\n"
            "    try:\n"
            "        dsrt.initialize(model=m, model_parameters=m.parameters(), config=cfg)\n"
            "    except ImportError as e:\n"
            "        print('ERROR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    for package in ("tensorboard", "wandb"):
        expected = f"ERROR ds_config \"{package}\" is enabled but the {package} package is not importable"
        assert expected in out.stdout, out
        assert f"pip install {package}" in out.stdout


def test_engine_monitor_exists_without_monitor_blocks():
    model = tiny_model()
    engine, *_ = dsrt.initialize(model=model, model_parameters=model.parameters(),
                                 config={"train_batch_size": 2, "optimizer": {"type": "Adam", "params": {"lr": 0.1}}})
    assert engine.monitor.enabled is False
    engine.monitor.write_events([("Train/Samples/lr", 0.1, 2)])  # DeepSpeed's call works, writes nothing


def test_flops_profiler_prints_the_profile_of_its_step_or_says_why_not(tmp_path):
    out = tmp_path / "flops.txt"
    block = {"enabled": True, "profile_step": 1, "output_file": str(out)}
    try:
        from torch.utils.flop_counter import FlopCounterMode  # noqa: F401
    except ImportError:
        with pytest.warns(UserWarning, match=r"flops_profiler: this torch .* has no torch.utils.flop_counter"):
            train(config(flops_profiler=block), steps=3)
        assert not out.exists()
        return
    train(config(flops_profiler=block), steps=3)
    text = out.read_text()
    assert "DeepSpeed Flops Profiler" in text and "Profile Summary at step 2:" in text
    # One micro-batch of 2 through Linear(8, 16) and Linear(16, 4): 2 * 2 * (8 * 16 + 16 * 4) flops.
    assert [line.split()[-1] for line in text.splitlines() if line.startswith("fwd flops per GPU:")] == ["768"]
    assert "0 (Linear): 144 params, 512 flops" in text and "2 (Linear): 68 params, 256 flops" in text
