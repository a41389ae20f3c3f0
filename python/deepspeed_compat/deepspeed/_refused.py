"""DeepSpeed's modules and names that dsrt does not implement, and the one ImportError that says so.

``import deepspeed.pipe`` would otherwise fail with Python's bare "No module named 'deepspeed.pipe'", which
reads like a broken installation. A meta-path finder (last on sys.meta_path, so it is asked only after every
real module was looked for) answers for exactly the module names below: finding one raises FeatureNotInDsrt
naming the feature and what to use instead. ``importlib.util.find_spec("deepspeed.pipe")`` raises it too, so no
feature probe is told that such a module exists. Any other missing ``deepspeed.X`` keeps Python's
ModuleNotFoundError. The top-level names DeepSpeed exports from these modules (``deepspeed.PipelineModule``,
``deepspeed.init_inference``, ...) raise the same error through the package's ``__getattr__``.
"""

import sys

_DATA_PARALLEL = "dsrt is data-parallel (DDP and ZeRO 1-3): train the whole model on every rank, with ZeRO-3 " \
                 "to partition its parameters"
_RUN_THE_MODULE = "run the torch module itself (engine.module, or the model before initialize)"

# feature -> (what dsrt offers instead, DeepSpeed's module names of it)
_FEATURES = {
    "pipeline parallelism (PipelineModule, PipelineEngine)": (
        _DATA_PARALLEL, ["pipe", "runtime.pipe"]),
    "Mixture of Experts (deepspeed.moe)": (
        "build the experts as ordinary torch modules; dsrt has no expert-parallel groups", ["moe"]),
    "sparse attention (deepspeed.ops.sparse_attention)": (
        "use dense attention (torch.nn.MultiheadAttention, or torch.nn.functional.scaled_dot_product_attention "
        "on torch 2)", ["ops.sparse_attention"]),
    "DeepSpeed's fused transformer kernels (DeepSpeedTransformerLayer)": (
        "use the model's own layers (torch.nn.TransformerEncoderLayer or the Hugging Face model's)",
        ["ops.transformer"]),
    "DeepSpeed inference and kernel injection (init_inference, module_inject)": (
        _RUN_THE_MODULE, ["inference", "module_inject", "model_implementations"]),
    "the RLHF hybrid engine (DeepSpeedHybridEngine)": (_RUN_THE_MODULE, ["runtime.hybrid_engine"]),
    "compression (quantization and pruning training)": (
        "only deepspeed.compression.helper (recursive_getattr, recursive_setattr) exists",
        ["compression.basic_layer", "compression.compress", "compression.config", "compression.constants",
         "compression.scheduler", "compression.utils", "runtime.compression"]),
    "DeepSpeed's JIT-compiled ops (op_builder)": (
        "dsrt's optimizers are built in: deepspeed.ops.adam, ops.adagrad, ops.lion, ops.lamb need no build",
        ["ops.op_builder", "ops.aio", "ops.quantizer", "ops.fp_quantizer", "ops.random_ltd",
         "ops.deepspeed4science"]),
    "tensor, sequence and expert parallel groups (deepspeed.utils.groups)": (
        "dsrt has one data-parallel group: deepspeed.comm acts on it",
        ["utils.groups", "sequence", "runtime.sequence_parallel", "runtime.tensor_parallel", "runtime.domino"]),
    "OptimizedLinear (deepspeed.linear: LoRA over sharded, quantized base weights)": (
        "use a LoRA library (peft) on ordinary torch.nn.Linear layers", ["linear"]),
    "NVMe offload (swap_tensor)": ("offload to the CPU: offload_optimizer/offload_param device \"cpu\"",
                                   ["runtime.swap_tensor", "nvme"]),
    "the data efficiency library (curriculum learning, random-LTD, data sampling)": (
        "build the DataLoader and its sampler in the script", ["runtime.data_pipeline"]),
    "autotuning": ("set the batch sizes and ZeRO options in the config", ["autotuning"]),
    "ZeRO-3 TiledLinear and MiCS": (_DATA_PARALLEL, ["runtime.zero.tiling", "runtime.zero.mics"]),
    "Nebula checkpointing": ("engine.save_checkpoint writes dsrt's checkpoints", ["nebula"]),
}

# deepspeed.<name> (DeepSpeed's top-level exports from the modules above) -> feature
_TOP_LEVEL = {
    "PipelineModule": "pipeline parallelism (PipelineModule, PipelineEngine)",
    "PipelineEngine": "pipeline parallelism (PipelineModule, PipelineEngine)",
    "DeepSpeedTransformerLayer": "DeepSpeed's fused transformer kernels (DeepSpeedTransformerLayer)",
    "DeepSpeedTransformerConfig": "DeepSpeed's fused transformer kernels (DeepSpeedTransformerLayer)",
    "init_inference": "DeepSpeed inference and kernel injection (init_inference, module_inject)",
    "InferenceEngine": "DeepSpeed inference and kernel injection (init_inference, module_inject)",
    "DeepSpeedInferenceConfig": "DeepSpeed inference and kernel injection (init_inference, module_inject)",
    "default_inference_config": "DeepSpeed inference and kernel injection (init_inference, module_inject)",
    "replace_transformer_layer": "DeepSpeed inference and kernel injection (init_inference, module_inject)",
    "revert_transformer_layer": "DeepSpeed inference and kernel injection (init_inference, module_inject)",
    "DeepSpeedHybridEngine": "the RLHF hybrid engine (DeepSpeedHybridEngine)",
    "tp_model_init": "tensor, sequence and expert parallel groups (deepspeed.utils.groups)",
}

_MODULES = {f"deepspeed.{name}": feature for feature, (_, names) in _FEATURES.items() for name in names}


class FeatureNotInDsrt(ImportError):
    """A DeepSpeed module or name whose feature dsrt does not implement."""


def refusal(what, feature):
    """The error for ``what`` (a module or a name) of DeepSpeed's ``feature``."""
    instead = _FEATURES[feature][0]
    return FeatureNotInDsrt(f"{what}: dsrt does not implement {feature} (this deepspeed is dsrt's compatibility "
                            f"package, docs/python.md)\n  hint: {instead}", name=what)


def refused_module(fullname):
    """The feature of DeepSpeed module ``fullname`` (or of the module it lies in), None when dsrt does not
    refuse it."""
    parts = fullname.split(".")
    for n in range(len(parts), 1, -1):
        feature = _MODULES.get(".".join(parts[:n]))
        if feature is not None:
            return feature
    return None


def refused_name(name):
    """The feature of ``deepspeed.<name>``, a top-level name or submodule dsrt refuses; None otherwise."""
    return _TOP_LEVEL.get(name) or _MODULES.get(f"deepspeed.{name}")


# dsrt.<module> -> deepspeed.<module> for the aliased packages (install()): ``from deepspeed.utils import groups``
# looks for "dsrt.utils.groups", since deepspeed.utils is the module dsrt.utils.
_deepspeed_name_of = {}


def deepspeed_name(fullname):
    """``fullname`` as DeepSpeed names it: "dsrt.utils.groups" -> "deepspeed.utils.groups" (through the longest
    aliased package it lies in); a name outside them unchanged."""
    parts = fullname.split(".")
    for n in range(len(parts) - 1, 0, -1):
        alias = _deepspeed_name_of.get(".".join(parts[:n]))
        if alias is not None:
            return ".".join([alias, *parts[n:]])
    return fullname


class RefusingFinder:
    """Last on sys.meta_path: raises FeatureNotInDsrt for the DeepSpeed modules dsrt refuses (by their DeepSpeed
    name, or their dsrt name under an aliased package), None otherwise."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        if not fullname.startswith(("deepspeed.", "dsrt.")):
            return None
        name = deepspeed_name(fullname)
        feature = refused_module(name) if name.startswith("deepspeed.") else None
        if feature is None:
            return None
        raise refusal(f"import {name}", feature)

    @staticmethod
    def invalidate_caches():
        pass


def install(aliases):
    """``aliases``: deepspeed's module names (without "deepspeed.") -> the dsrt modules they are."""
    for name, target in sorted(aliases.items(), key=lambda item: -len(item[0])):  # deepspeed.runtime.zero
        _deepspeed_name_of.setdefault(f"dsrt.{target}", f"deepspeed.{name}")
    if RefusingFinder not in sys.meta_path:
        sys.meta_path.append(RefusingFinder)
