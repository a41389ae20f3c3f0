"""deepspeed.initialize() for dsrt: same signature, same return value, the C++ engine underneath."""

import os

import torch

from dsrt import _C, comm
from dsrt.engine import DeepSpeedEngine
from dsrt.client_optimizer import ClientStepper, check_client_optimizer, placeholder_block
from dsrt.optimizer import UntranslatableOptimizer, optimizer_block

def _config_source(args, config, config_params):
    """DeepSpeed's rules: config= (or its old name config_params=) or args.deepspeed_config, not both."""
    if config is None:
        config = config_params
    from_args = getattr(args, "deepspeed_config", None) if args is not None else None
    if from_args is None and args is not None:
        from_args = getattr(args, "deepscale_config", None)
    if config is not None and from_args is not None:
        raise _C.DsrtError("initialize: a config was given both as config= and as args.deepspeed_config "
                           f"('{from_args}'); pass one of them")
    config = config if config is not None else from_args
    if config is None:
        raise _C.DsrtError("initialize: no DeepSpeed config: pass config= (a path or a dict) or "
                           "--deepspeed_config (dsrt.add_config_arguments)")
    if isinstance(config, os.PathLike):
        config = os.fspath(config)
    if not isinstance(config, (str, dict)):
        raise _C.DsrtError(f"initialize: config must be a path or a dict, got {type(config).__name__}")
    return config


def _param_groups(model_parameters):
    """model_parameters as torch param groups: a list of dicts with a "params" list (tensors, or
    DeepSpeed/torch param groups with their own lr, weight_decay, ...); None when not given."""
    if model_parameters is None:
        return None
    groups, loose = [], []
    for i, item in enumerate(list(model_parameters)):
        if isinstance(item, dict):
            if "params" not in item:
                raise _C.DsrtError(f"initialize: model_parameters group {i} has no 'params' (keys: "
                                   f"{', '.join(sorted(item)) or 'none'}); a torch param group is "
                                   f"{{'params': [tensors], 'weight_decay': ...}}")
            group = dict(item)
            params = group["params"]
            group["params"] = [params] if isinstance(params, torch.Tensor) else list(params)
            groups.append(group)
        else:
            loose.append(item)
    if loose:
        groups.insert(0, {"params": loose})
    return groups


def _named_trainable(model, wanted):
    """(name, parameter) pairs the engine trains: the model's registration order (names key the
    checkpoint), restricted to ``wanted`` when given, requires_grad only, each tensor once (tied weights)."""
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if wanted is not None:
        known = {id(p) for _, p in model.named_parameters()}
        strangers = [p for p in wanted if id(p) not in known]
        if strangers:
            raise _C.DsrtError(f"initialize: model_parameters holds {len(strangers)} tensor(s) that are not "
                               f"parameters of the model (shape {tuple(strangers[0].shape)} first)")
        ids = {id(p) for p in wanted}
        named = [(n, p) for n, p in named if id(p) in ids]
    if not named:
        raise _C.DsrtError(f"initialize: the model ({type(model).__name__}) has no parameter that requires grad")
    return named


def _with_client_optimizer(config, optimizer):
    """(config dict with the client optimizer's block, stepper): the block translates a class dsrt builds
    (stepper None); any other torch optimizer steps itself through a ClientStepper over the flat partitions,
    under DeepSpeed's rules. Refuses a config that has its own optimizer block."""
    if isinstance(config, str):
        from dsrt.config_file import read_config_file
        config = read_config_file(config)
    if "optimizer" in config:
        raise _C.DsrtError("initialize: an optimizer was passed as optimizer= and the config has an "
                           "\"optimizer\" block; pass one of them")
    config = dict(config)
    try:
        config["optimizer"] = optimizer_block(optimizer)
        return config, None
    except UntranslatableOptimizer:
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise  # nothing to step: the refusal names the object's type
    check_client_optimizer(config, optimizer, comm.get_rank() if comm.is_initialized() else
                           int(os.environ.get("RANK", "0")))
    config["optimizer"] = placeholder_block(optimizer)
    return config, ClientStepper(optimizer)


def _without_optimizer(config):
    """(config, True) with a placeholder optimizer block when the config has none: DeepSpeed then builds an
    engine that only runs forward (Hugging Face's evaluate() before train() at ZeRO-3). The C++ engine needs
    an optimizer to partition for; plain SGD with lr 0 keeps no state, and the engine refuses backward/step."""
    as_dict = config
    if isinstance(config, str):
        from dsrt.config_file import read_config_file
        as_dict = read_config_file(config)
    if "optimizer" in as_dict:
        return config, False
    config = dict(as_dict)
    config["optimizer"] = {"type": "SGD", "params": {"lr": 0.0}}
    return config, True


def _is_optimizer_factory(optimizer):
    return optimizer is not None and callable(optimizer) and not isinstance(optimizer, torch.optim.Optimizer)


def _check_scheduler_fits_optimizer(optimizer, lr_scheduler):
    """DeepSpeed's rule, with its AssertionError: a scheduler object is bound to an optimizer object, so it cannot
    come with an optimizer that does not exist yet (a factory) or with none at all."""
    if isinstance(lr_scheduler, _scheduler_base()) and not isinstance(optimizer, torch.optim.Optimizer):
        raise _C.DsrtAssertionError(f"Client Optimizer (type = {type(optimizer)} is not instantiated but Client LR "
                                    f"Scheduler is instantiated")


def _scheduler_base():
    lr_scheduler = torch.optim.lr_scheduler
    return getattr(lr_scheduler, "LRScheduler", lr_scheduler._LRScheduler)


def _optimizer_from_factory(factory, model, model_parameters):
    """initialize(optimizer=<callable>): what the callable returns for the parameters, checked."""
    if model_parameters is None:
        params = list(model.parameters())
    else:
        params = model_parameters if isinstance(model_parameters, list) else list(model_parameters)
    name = getattr(factory, "__qualname__", type(factory).__name__)
    built = factory(params)
    if not isinstance(built, torch.optim.Optimizer):
        raise _C.DsrtError(f"initialize(optimizer={name}): the callable returned {type(built).__name__}, not a "
                           f"torch.optim.Optimizer\n  hint: a factory takes model_parameters and returns the "
                           f"optimizer over them, e.g. lambda params: torch.optim.AdamW(params, lr=1e-3)")
    return built


def _engine_device(local_rank):
    """DeepSpeed moves the module to its accelerator device at initialize (cuda:LOCAL_RANK under NCCL)."""
    import torch.distributed as dist
    if dist.is_initialized() and dist.get_backend() == "nccl":
        return torch.device("cuda", local_rank)
    return None


def initialize(args=None, model=None, optimizer=None, model_parameters=None, training_data=None,
               lr_scheduler=None, distributed_port=29500, mpu=None, dist_init_required=None, collate_fn=None,
               config=None, config_params=None):
    """Returns (engine, optimizer, training_dataloader, lr_scheduler) as deepspeed.initialize() does.

    The engine wraps ``model``; ``config`` is a ds_config path (JSON or YAML) or dict. Raises DsrtError
    (a RuntimeError) with the engine's one-line message for any bad input.
    """
    if model is None:
        # DeepSpeed asserts it; a model passed positionally lands in args= and gets here too.
        raise _C.DsrtAssertionError("deepspeed.initialize requires a model (model=), got None"
                                    + (f"; args= got a {type(args).__name__}" if args is not None else ""))
    if not isinstance(model, torch.nn.Module):
        raise _C.DsrtError(f"initialize: model must be a torch.nn.Module, got {type(model).__name__}")
    if mpu is not None:
        raise _C.DsrtError("initialize(mpu=...): model parallelism is not supported by dsrt (data parallel only)")
    config = _config_source(args, config, config_params)
    source = config if isinstance(config, str) else "<config dict>"
    factory = optimizer if _is_optimizer_factory(optimizer) else None
    _check_scheduler_fits_optimizer(optimizer, lr_scheduler)
    stepper, inference_only = None, False
    if optimizer is None:
        config, inference_only = _without_optimizer(config)
    elif factory is None:
        config, stepper = _with_client_optimizer(config, optimizer)
    comm.init_distributed(distributed_port=distributed_port, dist_init_required=dist_init_required,
                          verbose=False)
    local_rank = int(os.environ.get("LOCAL_RANK", getattr(args, "local_rank", 0) or 0))
    device = _engine_device(local_rank)
    if device is not None:
        torch.cuda.set_device(device)
        model.to(device)
    if factory is not None:
        # DeepSpeed calls the factory once the module is on its device, with model_parameters as given (the
        # module's parameters when None), and then treats what it returns as a client optimizer.
        optimizer = _optimizer_from_factory(factory, model, model_parameters)
        config, stepper = _with_client_optimizer(config, optimizer)
    groups = optimizer.param_groups if optimizer is not None else _param_groups(model_parameters)
    wanted = None if groups is None else [p for g in groups for p in g["params"]]
    named = _named_trainable(model, wanted)
    if named[0][1].is_cuda:
        torch.cuda.set_device(named[0][1].device)
    engine = DeepSpeedEngine(model, named, config, source, comm._dist_context(local_rank), local_rank,
                             training_data=training_data, collate_fn=collate_fn, param_groups=groups,
                             client_optimizer=optimizer, client_lr_scheduler=lr_scheduler,
                             inference_only=inference_only, client_stepper=stepper)
    return engine, engine.optimizer, engine.training_dataloader, engine.lr_scheduler
