"""What fp16 and bf16 say on this machine, each in a fresh interpreter (warnings are once per process):
fp16 on a torch without float16 CPU kernels is refused at initialize, naming fp16.enabled and the remedy
(bf16), whatever the model computes; where torch has the kernels fp16 trains. The decision is the probe's
(a float16 addmm), not torch's version. The bf16-on-Gloo note is one "[dsrt] warning:" line from rank 0,
not a glog line."""

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import BUILD, cpu_half_matmul_error

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


@pytest.mark.parametrize("model", ["torch.nn.Linear(8, 4)", "HalfSafeLinear()"])
def test_fp16_on_the_cpu_is_refused_at_initialize_exactly_where_torch_lacks_float16_kernels(model):
    proc = run(f"""
        try:
            e = engine({model}, fp16={{"enabled": True}})
        except dsrt.DsrtError as err:
            print("REFUSED", err)
            raise SystemExit(0)
        loss = e(torch.randn(2, 8).half()).float().sum()
        e.backward(loss); e.step()
        print("TRAINED", e.global_steps)
    """)
    assert proc.returncode == 0, proc.stderr
    torch_says = cpu_half_matmul_error()
    if torch_says is None:
        assert "TRAINED 1" in proc.stdout and "float16" not in proc.stderr, proc
        return
    assert proc.stdout.startswith("REFUSED <config dict>: fp16.enabled: this torch has no float16 kernels for the "
                                  "model on cpu (" + torch_says + "), got 'true'\n"), proc
    assert 'hint: use "bf16": {"enabled": true} instead of fp16' in proc.stdout, proc


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

