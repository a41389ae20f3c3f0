"""The names DeepSpeed scripts import beyond initialize, through the compat package's `deepspeed.` (one process,
a world of one): each one DeepSpeed has and dsrt builds behaves as DeepSpeed's definition, and each feature dsrt
does not implement fails with one ImportError that names it."""

import importlib
import importlib.util
import logging
import random
import sys

import numpy
import pytest
import torch

from conftest import REPO

sys.path.insert(0, str(REPO / "python" / "deepspeed_compat"))
try:
    import deepspeed
except ImportError as e:  # DeepSpeed itself is installed here: the compat package refuses to share it
    deepspeed = None
    # Each test is reported skipped (a whole-module skip collects nothing, which pytest counts as a failure).
    # The torch 2 leg runs the compat package in its Hugging Face environment instead (tests/hf).
    pytestmark = pytest.mark.skip(reason=f"the compat package cannot be imported beside DeepSpeed: {e}")

import dsrt  # noqa: E402


def tiny_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def test_elasticity_and_the_version_module():
    """deepspeed.elasticity is dsrt's; deepspeed.git_version_info (DeepSpeed's tests read the version there) is a
    module of the compat package that says what it stands for."""
    assert importlib.import_module("deepspeed.elasticity.config") is dsrt.elasticity.config
    assert deepspeed.elasticity.compute_elastic_config is dsrt.elasticity.compute_elastic_config
    from deepspeed.git_version_info import git_branch, installed_ops, version
    assert version == deepspeed.__version__ == "0.14.4" and git_branch == "dsrt" and installed_ops == {}


def test_the_modules_are_dsrt_s_own():
    pairs = {"runtime.utils": "runtime.utils", "runtime.config": "runtime.config",
             "runtime.dataloader": "runtime.dataloader", "runtime.zero.offload_config": "zero.offload_config",
             "runtime.zero.config": "zero.config", "runtime.zero.utils": "zero.utils",
             "utils.timer": "utils.timer", "profiling.flops_profiler": "profiling.flops_profiler",
             "compression.helper": "compression.helper",
             "runtime.activation_checkpointing.checkpointing": "checkpointing"}
    for ds_name, dsrt_name in pairs.items():
        assert importlib.import_module(f"deepspeed.{ds_name}") is importlib.import_module(f"dsrt.{dsrt_name}")
    assert deepspeed.get_accelerator is dsrt.accelerator.get_accelerator
    assert deepspeed.get_accelerator().device_name() in ("cpu", "cuda")
    from deepspeed.runtime.zero import ZeroParamStatus
    from deepspeed.runtime.zero.partition_parameters import GatheredParameters, ZeroParamStatus as Status
    assert Status is ZeroParamStatus and GatheredParameters is deepspeed.zero.GatheredParameters
    from deepspeed.utils import RepeatingLoader
    assert RepeatingLoader is deepspeed.runtime.dataloader.RepeatingLoader
    # `import dsrt as deepspeed` reaches DeepSpeed's paths by attribute
    assert dsrt.runtime.zero.partition_parameters.ZeroParamStatus is ZeroParamStatus
    assert dsrt.runtime.utils is deepspeed.runtime.utils and dsrt.get_accelerator is deepspeed.get_accelerator


def test_enums_and_constants_have_deepspeed_s_values():
    from deepspeed.runtime import config
    from deepspeed.runtime.zero.config import ZeroStageEnum
    from deepspeed.runtime.zero.offload_config import OffloadDeviceEnum, OffloadStateTypeEnum
    from deepspeed.runtime.zero.partition_parameters import ZeroParamStatus, ZeroParamType
    assert [(s.name, s.value) for s in ZeroParamStatus] == [("AVAILABLE", 1), ("NOT_AVAILABLE", 2), ("INFLIGHT", 3)]
    assert [(s.name, s.value) for s in ZeroParamType] == [("NORMAL", 1), ("PARTITIONED", 2), ("REMOTE", 3)]
    assert [s.value for s in OffloadDeviceEnum] == ["none", "cpu", "nvme"] and OffloadDeviceEnum.cpu == "cpu"
    assert OffloadDeviceEnum("cpu") is OffloadDeviceEnum.cpu
    assert [s.value for s in OffloadStateTypeEnum] == ["optim_states", "hp_params", "lp_params", "lp_grads",
                                                        "contiguous_grad_buffer"]
    assert ZeroStageEnum.weights == 3 and ZeroStageEnum.max_stage is ZeroStageEnum.weights
    assert [int(s) for s in ZeroStageEnum] == [0, 1, 2, 3]
    assert (config.ADAM_OPTIMIZER, config.ADAMW_OPTIMIZER, config.LAMB_OPTIMIZER, config.ONEBIT_LAMB_OPTIMIZER,
            config.LION_OPTIMIZER, config.ADAGRAD_OPTIMIZER) == ("adam", "adamw", "lamb", "onebitlamb", "lion",
                                                                 "adagrad")
    assert len(config.DEEPSPEED_OPTIMIZERS) == 11 and config.TORCH_ADAM_PARAM == "torch_adam"
    assert deepspeed.ADAM_OPTIMIZER == "adam" and deepspeed.LAMB_OPTIMIZER == "lamb"
    from deepspeed.runtime.zero.utils import ZeRORuntimeException
    assert issubclass(ZeRORuntimeException, Exception)


def test_repeating_loader_restarts_the_loader_when_it_ends():
    from deepspeed.utils import RepeatingLoader
    loader = torch.utils.data.DataLoader(list(range(5)), batch_size=2)
    it = RepeatingLoader(loader)
    assert iter(it) is it
    assert [next(it).tolist() for _ in range(6)] == [[0, 1], [2, 3], [4], [0, 1], [2, 3], [4]]
    with pytest.raises(StopIteration):  # an empty loader has nothing to repeat
        next(RepeatingLoader([]))


def test_set_random_seed_seeds_python_numpy_and_torch():
    from deepspeed.runtime.utils import set_random_seed
    set_random_seed(123)
    first = (random.random(), numpy.random.rand(), torch.rand(1).item())
    set_random_seed(123)
    assert (random.random(), numpy.random.rand(), torch.rand(1).item()) == first
    random.seed(123), numpy.random.seed(123), torch.manual_seed(123)
    assert (random.random(), numpy.random.rand(), torch.rand(1).item()) == first


def test_clip_grad_norm_clips_as_torch_and_returns_the_norm():
    from deepspeed.runtime.utils import clip_grad_norm_
    for norm_type, max_norm in ((2, 0.5), (1, 0.5), (float("inf"), 0.1), (2, 1e3)):
        a, b = tiny_model(), tiny_model()
        for m in (a, b):
            m(torch.randn(3, 8, generator=torch.Generator().manual_seed(1))).pow(2).sum().backward()
        got = clip_grad_norm_(a.parameters(), max_norm, norm_type=norm_type)
        want = torch.nn.utils.clip_grad_norm_(b.parameters(), max_norm, norm_type=norm_type)
        assert torch.allclose(got.reshape(()), want, rtol=1e-5), norm_type
        for p, q in zip(a.parameters(), b.parameters()):  # torch's coefficient is max/(norm+1e-6) too
            assert torch.allclose(p.grad, q.grad, rtol=1e-5, atol=1e-8)


def test_see_memory_usage_prints_only_when_forced(capsys):
    from deepspeed.runtime.utils import see_memory_usage
    see_memory_usage("not forced")
    assert capsys.readouterr().out == ""
    see_memory_usage("after the step", force=True)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "after the step"
    assert lines[1].startswith("MA ") and "Max_MA" in lines[1] and "Max_CA" in lines[1]
    assert lines[2].startswith("CPU Virtual Memory:  used = ")


def test_move_to_device_walks_containers():
    from deepspeed.runtime.utils import move_to_device
    t = torch.ones(2)
    out = move_to_device({"a": [t, (t,)], "b": t}, "cpu", torch.is_tensor)
    assert out["b"] is t and out["a"][1][0] is t
    assert move_to_device([t], "cpu")[0].equal(t)  # DeepSpeed 0.17's default: every leaf .to(device)
    from deepspeed.runtime.utils import copy_to_device
    copied = copy_to_device({"a": [t, 3], "b": (t.double(),)}, "cpu", lambda x: torch.is_tensor(x) and x.dtype == torch.float)
    assert copied["a"][0].equal(t) and copied["a"][1] == 3 and copied["b"][0].dtype == torch.double


def test_timer_measures_named_intervals():
    from deepspeed.utils.timer import SynchronizedWallClockTimer
    timers = SynchronizedWallClockTimer()
    timers("fwd").start()
    sum(range(10000))
    timers("fwd").stop()
    assert timers("fwd") is timers.get_timers()["fwd"]
    assert timers("fwd").elapsed(reset=False) > 0
    assert timers("fwd").elapsed() == 0  # as DeepSpeed's: reading the intervals consumes them, reset or not
    timers("fwd").start()
    assert timers("fwd").elapsed() >= 0 and timers("fwd").started_  # a running timer keeps running
    timers("fwd").stop()
    records = []
    handler = logging.Handler(logging.INFO)
    handler.emit = records.append
    deepspeed.utils.logger.addHandler(handler)
    level = deepspeed.utils.logger.level
    deepspeed.utils.logger.setLevel(logging.INFO)  # DeepSpeed's logger is at WARNING, as dsrt's
    try:
        timers.log(["fwd"])
    finally:
        deepspeed.utils.logger.setLevel(level)
        deepspeed.utils.logger.removeHandler(handler)
    assert len(records) == 1 and "] time (ms) | fwd: " in records[0].getMessage()
    with pytest.raises(AssertionError):
        timers("bwd").stop()


def test_compression_helper_gets_and_sets_by_dotted_name():
    from deepspeed.compression.helper import recursive_getattr, recursive_setattr
    model = torch.nn.Sequential(torch.nn.Sequential(torch.nn.Linear(2, 2)))
    assert recursive_getattr(model, "0.0") is model[0][0]
    new = torch.nn.Linear(2, 3)
    recursive_setattr(model, "0.0", new)
    assert model[0][0] is new


def zero3_engine(model, **zero):
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config={
        "train_batch_size": 2, "optimizer": {"type": "Adam", "params": {"lr": 0.01}},
        "zero_optimization": dict(stage=3, **zero)})
    return engine


def test_zero3_parameters_say_whether_they_are_gathered():
    """DeepSpeed-Chat's test, `hasattr(p, "ds_id") and p.ds_status == ZeroParamStatus.NOT_AVAILABLE`, picks the
    released parameters: NOT_AVAILABLE (empty) outside GatheredParameters and the forward, AVAILABLE (full)
    inside. Parameters no ZeRO-3 engine manages have no ds_* attributes, as DeepSpeed's plain parameters."""
    from deepspeed.runtime.zero.partition_parameters import ZeroParamStatus
    model = tiny_model()
    assert not hasattr(model[0].weight, "ds_id")
    engine = zero3_engine(model, stage3_param_persistence_threshold=0)
    params = list(model.parameters())
    assert [p.ds_id for p in params] == [0, 1, 2, 3]
    assert [tuple(p.ds_shape) for p in params] == [(16, 8), (16,), (4, 16), (4,)]
    assert [p.ds_numel for p in params] == [128, 16, 64, 4]
    assert [p.ds_status for p in params] == [ZeroParamStatus.NOT_AVAILABLE] * 4
    assert [p.numel() for p in params] == [0] * 4
    fetch = [p for p in params if hasattr(p, "ds_id") and p.ds_status == ZeroParamStatus.NOT_AVAILABLE]
    with deepspeed.zero.GatheredParameters(fetch):
        assert [p.ds_status for p in params] == [ZeroParamStatus.AVAILABLE] * 4
        assert [p.numel() for p in params] == [128, 16, 64, 4]
    assert [p.ds_status for p in params] == [ZeroParamStatus.NOT_AVAILABLE] * 4
    seen = []
    model[2].register_forward_pre_hook(lambda module, args: seen.append(module.weight.ds_status))
    engine(torch.randn(2, 8))
    assert seen == [ZeroParamStatus.AVAILABLE]
    engine.destroy()
    assert not hasattr(params[0], "ds_id")


def test_small_zero3_parameters_stay_available():
    """Below stage3_param_persistence_threshold (default 1e5 elements) a parameter is never released: it stays
    AVAILABLE, as DeepSpeed's persistent parameters."""
    from deepspeed.runtime.zero.partition_parameters import ZeroParamStatus
    model = tiny_model()
    zero3_engine(model)
    assert {p.ds_status for p in model.parameters()} == {ZeroParamStatus.AVAILABLE}


def test_zero2_parameters_have_no_ds_attributes():
    model = tiny_model()
    deepspeed.initialize(model=model, model_parameters=model.parameters(), config={
        "train_batch_size": 2, "optimizer": {"type": "Adam", "params": {"lr": 0.01}},
        "zero_optimization": {"stage": 2}})
    assert not any(hasattr(p, "ds_id") or hasattr(p, "ds_status") for p in model.parameters())


def test_a_value_assigned_to_a_ds_attribute_is_kept():
    p = torch.nn.Parameter(torch.zeros(2))
    p.ds_id = 7  # other code marking parameters (DeepSpeed's own, sharing the process) keeps its marks
    assert p.ds_id == 7
    del p.ds_id
    assert not hasattr(p, "ds_id")


REFUSED = {  # statement -> the words its error must hold
    "import deepspeed.pipe": "pipeline parallelism",
    "from deepspeed.pipe import PipelineModule": "pipeline parallelism",
    "from deepspeed import PipelineModule": "pipeline parallelism",
    "from deepspeed.runtime.pipe.engine import PipelineEngine": "pipeline parallelism",
    "from deepspeed.moe.layer import MoE": "Mixture of Experts",
    "from deepspeed.moe.utils import split_params_into_different_moe_groups_for_optimizer": "Mixture of Experts",
    "from deepspeed.ops.sparse_attention import FixedSparsityConfig": "sparse attention",
    "from deepspeed.ops import sparse_attention": "sparse attention",
    "from deepspeed import DeepSpeedTransformerLayer, DeepSpeedTransformerConfig": "DeepSpeedTransformerLayer",
    "from deepspeed.ops.transformer import DeepSpeedTransformerLayer": "DeepSpeedTransformerLayer",
    "deepspeed.init_inference": "inference",
    "from deepspeed import replace_transformer_layer": "inference",
    "import deepspeed.module_inject": "inference",
    "from deepspeed.compression.compress import init_compression": "compression",
    "from deepspeed.ops.op_builder import CPUAdamBuilder": "op_builder",
    "from deepspeed.utils import groups": "parallel groups",
    "from deepspeed.runtime.sequence_parallel.ulysses_sp import UlyssesSPAttentionHF": "parallel groups",
    "from deepspeed.runtime.domino.transformer import DominoTransformer": "parallel groups",
    "from deepspeed.runtime.data_pipeline.data_routing.helper import convert_to_random_ltd": "data efficiency",
    "from deepspeed.runtime.zero.tiling import TiledLinear": "TiledLinear",
}


@pytest.mark.parametrize("statement", sorted(REFUSED))
def test_what_dsrt_does_not_implement_fails_with_one_clear_import_error(statement):
    with pytest.raises(ImportError) as info:
        if statement.startswith(("import ", "from ")):
            exec(statement, {})
        else:
            eval(statement, {"deepspeed": deepspeed})
    message = str(info.value)
    assert REFUSED[statement] in message and "dsrt does not implement" in message and "hint: " in message
    assert type(info.value).__name__ == "FeatureNotInDsrt"


def test_feature_probes_are_not_told_a_refused_module_exists():
    assert importlib.util.find_spec("deepspeed") is not None  # transformers' and Accelerate's probe
    with pytest.raises(ImportError, match="pipeline parallelism"):
        importlib.util.find_spec("deepspeed.pipe")
    assert "deepspeed.pipe" not in sys.modules


def test_unknown_names_keep_python_s_errors():
    with pytest.raises(ModuleNotFoundError, match="No module named 'deepspeed.nonsense'") as info:
        importlib.import_module("deepspeed.nonsense")
    assert type(info.value) is ModuleNotFoundError
    assert importlib.util.find_spec("deepspeed.nonsense") is None
    assert not hasattr(deepspeed, "nonsense")
    with pytest.raises(ImportError, match="cannot import name 'nonsense'"):
        exec("from deepspeed.utils import nonsense", {})
