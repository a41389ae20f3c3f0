"""What fp16 and bf16 say on this machine, each in a fresh interpreter (warnings are once per process):
fp16 on a torch without float16 CPU kernels warns at initialize and fails its forward with the remedy
(bf16), while a model computing in fp32 still trains; where torch has the kernels fp16 just trains. The
bf16-on-Gloo note is one "[dsrt] warning:" line from rank 0, not a glog line."""

import os
import subprocess
import sys
import textwrap

import torch

from conftest import BUILD

PRELUDE = textwrap.dedent("""
    import torch, dsrt
    from conftest import HalfSafeLinear
    def engine(model, **precision):
        cfg = {"train_batch_size": 2, "optimizer": {"type": "Adam", "params": {"lr": 0.01}}, **precision}
        return dsrt.initialize(model=model, model_parameters=model.parameters(), config=cfg)[0]
""")


def run(code):
    env = dict(os.environ, PYTHONPATH=f"{BUILD / 'python'}{os.pathsep}{os.path.dirname(__file__)}")
    return subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, env=env)


def torch_has_cpu_half_matmul():
    half = torch.ones(1, 1, dtype=torch.half)
    try:
        torch.addmm(half, half, half)
        return True
    except RuntimeError:
        return False


def test_fp16_on_the_cpu_follows_what_this_torch_can_do():
    proc = run("""
        e = engine(torch.nn.Linear(8, 4), fp16={"enabled": True})
        try:
            loss = e(torch.randn(2, 8).half()).float().sum()
            e.backward(loss); e.step()
            print("TRAINED")
        except dsrt.DsrtError as err:
            print("REFUSED", err)
    """)
    assert proc.returncode == 0, proc.stderr
    if torch_has_cpu_half_matmul():
        assert "TRAINED" in proc.stdout and "float16" not in proc.stderr, proc
        return
    assert "REFUSED <config dict>: fp16.enabled: this torch has no float16 kernels for the model on cpu" \
        in proc.stdout, proc
    assert "not implemented for 'Half'" in proc.stdout and 'hint: use "bf16": {"enabled": true}' in proc.stdout
    # Said once at initialize, already with the remedy.
    assert proc.stderr.count("[dsrt] warning: <config dict>: fp16.enabled: this torch has no float16") == 1, proc
    assert '"bf16": {"enabled": true}' in proc.stderr


def test_fp16_with_a_model_that_computes_in_fp32_trains_everywhere():
    proc = run("""
        e = engine(HalfSafeLinear(), fp16={"enabled": True})
        loss = e(torch.randn(2, 8)).float().sum()
        e.backward(loss); e.step()
        print("TRAINED", e.global_steps)
    """)
    assert proc.returncode == 0 and "TRAINED 1" in proc.stdout, proc


def test_bf16_on_gloo_says_it_once_through_dsrts_warnings_not_glog():
    proc = run("""
        for _ in range(2):
            e = engine(torch.nn.Linear(8, 4), bf16={"enabled": True})
            loss = e(torch.randn(2, 8).bfloat16()).float().sum()
            e.backward(loss); e.step()
    """)
    assert proc.returncode == 0, proc.stderr
    assert "InitGoogleLogging" not in proc.stderr and "W20" not in proc.stderr, proc.stderr
    assert proc.stderr.count("[dsrt] warning: <config dict>: communication_data_type: Gloo cannot reduce "
                             "bfloat16") == 1, proc.stderr
