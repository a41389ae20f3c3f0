"""How a fresh interpreter ends after training: torch.distributed's group must be destroyed, and its Gloo
threads joined, while Python is still whole. A group freed in the interpreter's teardown aborts the rank now
and then ("terminate called without an active exception", SIGABRT), turning a finished job into a failed one.
dsrt's exit hook (python/dsrt/comm.py) collects engines left in reference cycles and makes engines still
alive (a script written at top level keeps its engine in a module global) let go of the group before
destroying it. An atexit hook registered before dsrt's runs after it and looks at what is left."""

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import BUILD

PRELUDE = textwrap.dedent("""
    import atexit, os, weakref
    import torch
    import torch.distributed as dist
    def threads():
        return len(os.listdir("/proc/self/task"))
    def after_dsrts_hook():
        print("after the hook: group initialized", dist.is_initialized(), "threads", threads(), flush=True)
    atexit.register(after_dsrts_hook)  # before dsrt's: runs after it
    import dsrt
    THREADS_BEFORE = threads()
    print("threads before", THREADS_BEFORE, flush=True)
    def engine(config, model=None, optimizer=None):
        model = model or torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
        cfg = {"train_batch_size": 2, **config}
        if optimizer is None:
            cfg.setdefault("optimizer", {"type": "Adam", "params": {"lr": 0.01}})
        e = dsrt.initialize(model=model, model_parameters=model.parameters(), optimizer=optimizer, config=cfg)[0]
        e.backward(e(torch.randn(2, 8)).sum()); e.step()
        print("threads with the group", threads(), flush=True)
        return e
""")

CONFIGS = {
    "stage0": {},
    "stage3_offload": {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
                                             "offload_param": {"device": "cpu"}}},
}


def run(code):
    env = dict(os.environ, PYTHONPATH=f"{BUILD / 'python'}{os.pathsep}{os.path.dirname(__file__)}",
               OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, env=env)


def thread_counts(stdout):
    def count(prefix):
        line = next(l for l in stdout.splitlines() if l.startswith(prefix))
        return int(line.rsplit(" ", 1)[1])
    return count("threads before"), count("threads with the group"), count("after the hook")


def check_orderly_exit(proc):
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "after the hook: group initialized False" in proc.stdout, proc.stdout
    before, with_group, after = thread_counts(proc.stdout)
    # The group started threads (else the count proves nothing), and they were joined before the teardown.
    assert with_group > before, proc.stdout
    assert after == before, proc.stdout


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_an_engine_kept_in_a_module_global_lets_go_of_the_group_at_exit(config):
    check_orderly_exit(run(f"e = engine({CONFIGS[config]!r})"))


def test_a_client_optimizers_engine_in_a_module_global_lets_go_of_the_group_at_exit():
    """The client optimizer's Python callbacks are freed with the native strategy, under the GIL."""
    check_orderly_exit(run("""
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
        opt = torch.optim.RMSprop(model.parameters(), lr=0.01)
        e = engine({"zero_optimization": {"stage": 1}, "zero_allow_untested_optimizer": True}, model, opt)
    """))


def test_an_engine_left_in_a_reference_cycle_is_freed_at_exit_before_its_group_is_destroyed():
    """An engine built inside main() outlives it in a reference cycle (hooks, optimizer and scheduler refer
    back to it): the hook collects it while the group is still alive."""
    proc = run("""
        freed = []
        def main():
            e = engine({})
            freed.append(weakref.ref(e, lambda _: print("engine freed, group alive:", dist.is_initialized(),
                                                         flush=True)))
        main()
        print("main returned, engine alive:", freed[0]() is not None, flush=True)
    """)
    # The cycle is real (else this test proves nothing), and the hook freed the engine before the group went.
    assert "main returned, engine alive: True" in proc.stdout, proc.stdout
    assert "engine freed, group alive: True" in proc.stdout, proc.stdout + proc.stderr[-2000:]
    check_orderly_exit(proc)


def test_a_released_engine_refuses_to_step_instead_of_crashing():
    """What the hook does to an engine that something calls after it (another atexit hook, a __del__)."""
    proc = run("""
        e = engine({})
        e._engine.release()
        try:
            e.backward(e(torch.randn(2, 8)).sum())
        except dsrt.DsrtError as err:
            print("REFUSED", err, flush=True)
        print("steps still read", e.global_steps, flush=True)
    """)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "REFUSED dsrt::Engine: this engine was released at interpreter exit" in proc.stdout, proc.stdout
    assert "steps still read 1" in proc.stdout, proc.stdout
