"""DeepSpeedEngine: DeepSpeed's engine API over dsrt._C.Engine.

The C++ engine holds the script's own parameter tensors (same TensorImpls): it scales the loss, runs
backward, reduces gradients (DDP buckets or ZeRO partitions), clips, steps the optimizer and the LR
schedule, and saves/loads checkpoints. This class adapts calling conventions, nothing more.
"""

import json
import os
import warnings

import torch

from dsrt import _C, comm
from dsrt.checkpoint_state import decode_client_state, deepspeed_client_state, encode_client_state
from dsrt.config_values import finite_config, fp16_auto_cast
from dsrt.config_blocks import client_blocks
from dsrt.data import make_dataloader
from dsrt.engine_api import EngineApi
from dsrt.monitor import MonitorMaster
from dsrt.monitor.training_events import TrainingEvents
from dsrt.profiling.flops_profiler import FlopsProfiler
from dsrt.optimizer import EngineOptimizer, check_groups, engine_lr_scheduler
from dsrt.utils import tensor_fragment
from dsrt.utils.zero_to_fp32 import copy_recovery_script
from dsrt.zero.broadcast import broadcast_from
from dsrt.zero.hooks import Stage3Hooks

_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


# client_state keys the engine adds to a checkpoint (and takes out again on load).
_GROUPS_KEY = "dsrt_param_groups"
_SCHEDULER_KEY = "lr_scheduler"
_CLIENT_FORMS_KEY = "dsrt_client_optimizer_forms"


def _group_indices(params, groups):
    """The param group of each trained parameter (all 0 without groups): the C++ optimizer steps each
    group's runs of its flat partition with that group's settings."""
    if groups is None:
        return [0] * len(params)
    where = {}
    for i, group in enumerate(groups):
        for p in group["params"]:
            where.setdefault(id(p), i)
    return [where[id(p)] for p in params]


def _engine_optimizer(engine, params, groups, client_optimizer):
    """The torch optimizer view initialize() returns: the client optimizer's groups when one was passed,
    else model_parameters' groups (or one group) completed with the config's optimizer settings."""
    defaults = dict(engine.optimizer_settings)
    defaults["lr"] = engine.get_lr()
    if client_optimizer is not None:
        return EngineOptimizer(engine, [{"params": params}], defaults, client=client_optimizer)
    if groups is None:
        return EngineOptimizer(engine, [{"params": params}], defaults)
    trained = {id(p) for p in params}
    view = [dict(g, params=[p for p in g["params"] if id(p) in trained]) for g in groups]
    check_groups(view, defaults, "initialize(model_parameters=...)")
    return EngineOptimizer(engine, view, defaults)


def _cast_half(value):
    """DeepSpeed's _cast_inputs_half: floating tensors in nested lists, tuples and dicts become fp16."""
    if isinstance(value, (list, tuple)):
        return value.__class__([_cast_half(v) for v in value])
    if isinstance(value, dict):
        return {k: _cast_half(v) for k, v in value.items()}
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.half()
    return value


def _unsupported(what: str, hint: str):
    raise _C.DsrtError(f"{what} is not supported by dsrt\n  hint: {hint}")


class DeepSpeedEngine(EngineApi, torch.nn.Module):
    """Returned by dsrt.initialize(); call it like the model, then backward(loss) and step()."""

    def __init__(self, model, named_params, config, config_source, dist_context, local_rank,
                 training_data=None, collate_fn=None, param_groups=None, client_optimizer=None,
                 client_lr_scheduler=None, inference_only=False, client_stepper=None):
        super().__init__()
        self._inference_only = inference_only
        self.module = model
        names = [n for n, _ in named_params]
        params = [p for _, p in named_params]
        full_shapes = [p.shape for p in params]  # before the engine partitions them (ZeRO-3's ds_shape)
        group_of = _group_indices(params, param_groups)
        blocks = client_blocks(config, config_source)
        # Before the engine exists, as DeepSpeed configures deepspeed.comm before _broadcast_model: the
        # initial broadcasts are logged too.
        comm.configure_comms_logger(blocks.comms_logger)
        if isinstance(config, str):
            self._engine = _C.Engine.from_file(params, names, config, dist_context, group_of, client_stepper)
        else:
            self._engine = _C.Engine.from_json(params, names, json.dumps(finite_config(config, config_source)),
                                               config_source, dist_context, group_of, client_stepper)
        comm._release_at_exit(self)  # the exit hook makes it let go of the process group (comm.py)
        # A client optimizer dsrt has no built-in for steps the flat fp32 tensor itself (client_optimizer.py):
        # its param groups hold views of that tensor from here on, as DeepSpeed's flat partitions.
        self._client_stepper = client_stepper
        if client_stepper is not None:
            self._engine.bind_client_optimizer()
        self.config = config
        self.local_rank = local_rank
        self.global_rank = dist_context.rank
        self.world_size = dist_context.world_size
        self.dp_world_size = dist_context.world_size
        self.mp_world_size = 1
        self.device = params[0].device
        self._params = params
        self._convert_buffers()
        self._prepare_frozen_parameters()
        self._auto_cast = fp16_auto_cast(config) and self._engine.fp16_enabled
        self._zero3 = None
        if self._engine.zero_stage == 3:
            from dsrt import zero
            self._zero3 = Stage3Hooks(model)
            zero._register_engine(self, params, full_shapes)
        tensor_fragment.register_engine(self, params)
        self._step_applied = False
        self.optimizer = _engine_optimizer(self._engine, params, param_groups, client_optimizer)
        if client_stepper is not None:
            self.optimizer.defaults = client_optimizer.defaults
            self.optimizer.state = client_optimizer.state
        self._engine_schedules = self._engine.has_scheduler
        if self._engine_schedules:
            # DeepSpeed: a scheduler block in the config wins over a client scheduler.
            self.lr_scheduler = engine_lr_scheduler(self._engine, self.optimizer)
            self._write_scheduled_lr()
        elif callable(client_lr_scheduler):
            self.lr_scheduler = client_lr_scheduler(self.optimizer)  # DeepSpeed: a factory gets the optimizer
        else:
            self.lr_scheduler = client_lr_scheduler
        self.training_dataloader = (self.deepspeed_io(training_data, collate_fn=collate_fn)
                                    if training_data is not None else None)
        self.monitor = MonitorMaster(blocks.monitor, self.global_rank)
        self._events = TrainingEvents(self, self.monitor)
        self._flops_profiler = (FlopsProfiler(model, blocks.flops_profiler, self.global_rank)
                                if blocks.flops_profiler.enabled else None)

    def _prepare_frozen_parameters(self):
        # DeepSpeed broadcasts every parameter of the module from rank 0 (_broadcast_model) and converts the
        # whole module to the 16-bit dtype; the C++ engine does both for the trained ones only. Broadcast in
        # fp32 first: Gloo cannot broadcast bfloat16, and rounding rank 0's values is what DeepSpeed gets.
        trained = {id(p) for p in self._params}
        frozen = [p for p in self.module.parameters() if id(p) not in trained]
        dtype = _DTYPES[self._engine.model_dtype]
        with torch.no_grad():
            for p in frozen:
                if self.world_size > 1:
                    broadcast_from(p, 0)
                if p.is_floating_point() and p.dtype != dtype:
                    p.data = p.data.to(dtype)

    def _convert_buffers(self):
        # DeepSpeed's module.half()/bfloat16() converts floating buffers too; the C++ engine did the params.
        dtype = _DTYPES[self._engine.model_dtype]
        if dtype == torch.float32:
            return
        with torch.no_grad():
            for buf in self.module.buffers():
                if buf.is_floating_point() and buf.dtype != dtype:
                    buf.data = buf.data.to(dtype)

    # ---- the training loop ------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        """The module's forward, timed as the engine's forward phase (and counted by the FLOP profiler
        at its profile_step)."""
        if self._auto_cast:  # fp16.auto_cast: DeepSpeed casts the positional inputs (not kwargs) to half
            inputs = _cast_half(inputs)
        if self._flops_profiler is not None and self._flops_profiler.active(self.global_steps):
            with self._flops_profiler.profile():
                return self._forward(*inputs, **kwargs)
        return self._forward(*inputs, **kwargs)

    def _forward(self, *inputs, **kwargs):
        if self._zero3 is None:
            return self._engine.forward(lambda: self.module(*inputs, **kwargs))
        try:
            return self._engine.forward(lambda: self.module(*inputs, **kwargs))
        except BaseException:
            self._zero3.abort_forward()  # a raising forward skips its modules' post hooks
            raise

    def backward(self, loss, allreduce_gradients=True, release_loss=False, retain_graph=False,
                 scale_wrt_gas=True):
        """Backpropagates loss / gradient_accumulation_steps (times the fp16 loss scale); with
        scale_wrt_gas=False the loss as given (the caller divided it, as Hugging Face's Trainer does).
        Returns loss."""
        self._check_trainable("backward()")
        if not allreduce_gradients:
            _unsupported("backward(allreduce_gradients=False)", "the engine always reduces gradients")
        if retain_graph:
            _unsupported("backward(retain_graph=True)", "call backward once per micro-step")
        if not isinstance(loss, torch.Tensor):
            raise _C.DsrtError(f"engine.backward: loss must be a torch.Tensor, got {type(loss).__name__}")
        if self.monitor.enabled:
            self._events.before_backward(loss)
        self._engine.backward(loss, bool(scale_wrt_gas))
        return loss

    def _check_trainable(self, call):
        if self._inference_only:
            # DeepSpeed asserts here ("must provide optimizer during init in order to use backward").
            raise _C.DsrtAssertionError(f"engine.{call}: this engine has no optimizer (the config has no "
                                        "\"optimizer\" block and initialize() got no optimizer=): it runs forward "
                                        "only\n  hint: add an \"optimizer\" block to train")

    def step(self, lr_kwargs=None):
        """Ends the micro-step; at a gradient accumulation boundary: clip, optimizer step with each param
        group's lr and weight decay, then the LR scheduler (the config's, or the client's as DeepSpeed
        steps it: after every step that was applied, with lr_kwargs)."""
        self._check_trainable("step()")
        if self._engine.no_sync:
            raise _C.DsrtAssertionError("It is illegal to call Engine.step() inside no_sync context manager")
        boundary = self._engine.is_gradient_accumulation_boundary()
        if boundary and self._client_stepper is None:  # a client optimizer reads its groups itself
            self._engine.set_group_settings(self.optimizer.group_settings(self._engine_schedules))
        skipped = self._engine.skipped_steps
        profiling = self._flops_profiler is not None and self._flops_profiler.active(self.global_steps)
        self._engine.step()
        if not boundary:
            return
        self._step_applied = self._engine.skipped_steps == skipped
        self.optimizer.overflow = not self._step_applied  # DeepSpeed's optimizer.overflow (fp16 skipped step)
        if self._step_applied:
            self._after_applied_step(lr_kwargs)
        if self.monitor.enabled:
            self._events.after_step()
        if comm.comms_logger.enabled:
            comm.comms_logger.drain()  # this step's engine collectives, so verbose lines come per step
        if profiling:
            self._flops_profiler.print_model_profile(self.global_steps)

    def _after_applied_step(self, lr_kwargs):
        self.optimizer.count_step()
        if self._engine_schedules:
            self._write_scheduled_lr()
        elif self.lr_scheduler is not None:
            try:
                self.lr_scheduler.step(**(lr_kwargs or {}))
            except TypeError:
                # DeepSpeed's fallback for schedulers that take the step number (Megatron's).
                self.lr_scheduler.step(self.global_steps)

    def _write_scheduled_lr(self):
        # DeepSpeed's schedulers write the lr into every param group; scripts read it from there.
        lr = self._engine.get_lr()
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    def zero_grad(self):
        self._engine.zero_grad()

    def is_gradient_accumulation_boundary(self) -> bool:
        return self._engine.is_gradient_accumulation_boundary()

    def set_gradient_accumulation_boundary(self, is_boundary):
        """DeepSpeed's: the caller says whether the next backward ends the accumulation window (Accelerate
        calls it before every backward and calls step() only at the boundary)."""
        self._engine.set_gradient_accumulation_boundary(bool(is_boundary))

    def destroy(self):
        """DeepSpeed's engine.destroy(): removes the ZeRO-3 hooks from the module and forgets its
        parameters, so the module can be used (or wrapped by another engine) without this one."""
        tensor_fragment.unregister_engine(self._params)
        if self._zero3 is not None:
            from dsrt import zero
            self._zero3.remove()
            self._zero3 = None
            zero._unregister_engine(self._params)

    def was_step_applied(self) -> bool:
        """False when the last optimizer step was skipped (fp16 gradient overflow)."""
        return self._step_applied

    # ---- counters and configuration ---------------------------------------------------------------
    @property
    def global_steps(self) -> int:
        return self._engine.global_steps

    @property
    def global_samples(self) -> int:
        return self._engine.global_samples

    @property
    def micro_steps(self) -> int:
        return self._engine.micro_steps

    @property
    def skipped_steps(self) -> int:
        return self._engine.skipped_steps

    @property
    def cur_scale(self) -> float:
        return self._engine.cur_scale

    loss_scale = cur_scale

    def get_lr(self):
        """Each param group's lr for the next step (DeepSpeed's engine.get_lr())."""
        return [group["lr"] for group in self.optimizer.param_groups]

    def get_global_grad_norm(self):
        norm = self._engine.last_grad_norm
        return None if norm < 0 else norm

    def train_batch_size(self) -> int:
        return self._engine.train_batch_size

    def train_micro_batch_size_per_gpu(self) -> int:
        return self._engine.train_micro_batch_size_per_gpu

    def gradient_accumulation_steps(self) -> int:
        return self._engine.gradient_accumulation_steps

    def zero_optimization_stage(self) -> int:
        return self._engine.zero_stage

    def zero_optimization(self) -> bool:
        return self._engine.zero_stage > 0

    def gradient_clipping(self) -> float:
        return self._engine.gradient_clipping

    def fp16_enabled(self) -> bool:
        return self._engine.fp16_enabled

    def bfloat16_enabled(self) -> bool:
        return self._engine.bf16_enabled

    def steps_per_print(self):
        return self._engine.steps_per_print

    def wall_clock_breakdown(self) -> bool:
        return self._engine.wall_clock_breakdown

    def model_state_bytes(self) -> int:
        """Parameters + gradients + optimizer state this rank holds on the model's device (ZeRO paper)."""
        return self._engine.model_state_bytes

    def offloaded_state_bytes(self) -> int:
        """ZeRO-Offload: bytes this rank keeps in host memory for the optimizer (0 without offload)."""
        return self._engine.offloaded_state_bytes

    def deepspeed_io(self, dataset, batch_size=None, route=None, pin_memory=True, data_sampler=None,
                     collate_fn=None, num_local_io_workers=None):
        """A DataLoader over this rank's shard of ``dataset`` with the micro-batch size (DeepSpeed's)."""
        return make_dataloader(dataset, batch_size or self.train_micro_batch_size_per_gpu(), self.global_rank,
                               self.dp_world_size, data_sampler=data_sampler, collate_fn=collate_fn,
                               num_workers=num_local_io_workers or 0,
                               pin_memory=pin_memory and self.device.type == "cuda")

    # ---- checkpoints ------------------------------------------------------------------------------
    def save_checkpoint(self, save_dir, tag=None, client_state=None, save_latest=True,
                        exclude_frozen_parameters=False):
        """Collective: writes SAVE_DIR/TAG atomically, then points SAVE_DIR/latest at it (if save_latest).

        dsrt saves the parameters the engine trains: frozen ones (requires_grad=False) are never in the
        checkpoint, which is what DeepSpeed does with exclude_frozen_parameters=True.
        """
        if not exclude_frozen_parameters:
            self._warn_frozen_not_saved()
        # DeepSpeed's order (state.update(client_state)): the script's own keys win over the engine's.
        state = self._engine_client_state()
        state.update(client_state or {})
        self._engine.save_checkpoint(str(save_dir), None if tag is None else str(tag), encode_client_state(state),
                                     save_latest=bool(save_latest))
        if self.global_rank == 0:
            copy_recovery_script(save_dir)
        return True

    def _warn_frozen_not_saved(self):
        if getattr(self, "_frozen_warned", False) or self.global_rank != 0:
            return
        trained = {id(p) for p in self._params}
        frozen = [n for n, p in self.module.named_parameters() if id(p) not in trained]
        if frozen:
            self._frozen_warned = True
            warnings.warn(f"save_checkpoint: {len(frozen)} frozen parameter(s) of the model ('{frozen[0]}' first) "
                          "are not saved: dsrt checkpoints hold the trained parameters only, as DeepSpeed's "
                          "exclude_frozen_parameters=True; rebuild them as the model was built before loading",
                          stacklevel=3)

    def load_checkpoint(self, load_dir, tag=None, load_module_strict=True, load_optimizer_states=True,
                        load_lr_scheduler_states=True, load_module_only=False, custom_load_fn=None):
        """Collective: restores model, optimizer (re-partitioned for this world size), scheduler and counters.

        The options behave as DeepSpeed's (docs/checkpoints.md): load_module_only loads the weights alone,
        load_optimizer_states / load_lr_scheduler_states leave that state fresh, load_module_strict=False
        tolerates missing and unexpected parameter names. Returns (path, client_state), or (None, None)
        when LOAD_DIR has no 'latest' and no tag was given.
        """
        if custom_load_fn is not None:
            _unsupported("load_checkpoint(custom_load_fn=...)",
                         "dsrt loads the module weights itself, by parameter name; load_module_strict=False "
                         "tolerates missing or extra names, or read the weights with dsrt.utils.zero_to_fp32 "
                         "and map them onto the model before dsrt.initialize")
        from dsrt import deepspeed_checkpoint
        ds_dir = deepspeed_checkpoint.resolve(load_dir, tag)
        if ds_dir is not None:  # written by DeepSpeed itself: converted, then loaded as below
            return deepspeed_checkpoint.load(self, ds_dir, load_module_strict=load_module_strict,
                                             load_optimizer_states=load_optimizer_states,
                                             load_lr_scheduler_states=load_lr_scheduler_states,
                                             load_module_only=load_module_only)
        path, client, saved = self._engine.load_checkpoint(
            str(load_dir), None if tag is None else str(tag), module_only=bool(load_module_only),
            optimizer_states=bool(load_optimizer_states), lr_scheduler_states=bool(load_lr_scheduler_states),
            strict=bool(load_module_strict))
        if not path:
            return None, None
        client = decode_client_state(client)
        client_scheduler = client.get(_SCHEDULER_KEY) if isinstance(client, dict) else None
        # DeepSpeed: the groups' hyper-parameters live in the optimizer's state dict, so they come back with
        # the optimizer state; the scheduler with load_lr_scheduler_states; neither with load_module_only.
        client = self._restore_engine_client_state(
            client, restore_scheduler=load_lr_scheduler_states and not load_module_only,
            restore_groups=load_optimizer_states and not load_module_only)
        return path, deepspeed_client_state(client, json.loads(saved), bool(load_module_only),
                                            bool(load_optimizer_states), bool(load_lr_scheduler_states),
                                            self._engine_schedules, client_scheduler)

    def save_16bit_model(self, save_dir, save_filename="pytorch_model.bin", exclude_frozen_parameters=False):
        """Collective, DeepSpeed's: rank 0 writes the module's full state dict in the model's dtype with
        torch.save (plain torch.load and from_pretrained open it). At ZeRO-3 only with
        stage3_gather_16bit_weights_on_model_save; without it nothing is written and every rank returns False."""
        from dsrt.engine_state_dict import consolidated_16bit_state_dict
        from dsrt.utils.logging import logger
        path = os.path.join(str(save_dir), save_filename)
        if self.zero_optimization_stage() == 3 and not self.zero_gather_16bit_weights_on_model_save():
            logger.info(f"Did not save the model {path} because stage3_gather_16bit_weights_on_model_save is False")
            return False
        state = consolidated_16bit_state_dict(self, exclude_frozen_parameters)
        if self.global_rank == 0:
            os.makedirs(str(save_dir), exist_ok=True)
            torch.save(state, path)
        return True

    def zero_gather_16bit_weights_on_model_save(self) -> bool:
        """zero_optimization.stage3_gather_16bit_weights_on_model_save (DeepSpeed's name for the query)."""
        return self._engine.gather_16bit_weights_on_model_save

    def _zero3_consolidated_16bit_state_dict(self, exclude_frozen_parameters=False):
        """Collective: the full 16-bit state dict on CPU on rank 0, None elsewhere (DeepSpeed's)."""
        from dsrt.engine_state_dict import consolidated_16bit_state_dict
        return consolidated_16bit_state_dict(self, exclude_frozen_parameters)

    def _engine_client_state(self):
        """What the checkpoint keeps besides the C++ engine's state: the param groups' hyper-parameters
        and a client LR scheduler's state (DeepSpeed saves both)."""
        state = {_GROUPS_KEY: self.optimizer.hyper_parameters()}
        if self._client_stepper is not None:
            state[_CLIENT_FORMS_KEY] = self._client_stepper.forms()
        if self.lr_scheduler is not None and not self._engine_schedules:
            state[_SCHEDULER_KEY] = self.lr_scheduler.state_dict()
        return state

    def _restore_engine_client_state(self, client, restore_scheduler=True, restore_groups=True):
        """Takes _engine_client_state()'s entries out of a loaded client_state and applies them."""
        if not isinstance(client, dict):
            return client
        groups = client.pop(_GROUPS_KEY, None)
        scheduler = client.pop(_SCHEDULER_KEY, None)
        forms = client.pop(_CLIENT_FORMS_KEY, None)
        if self._client_stepper is not None:
            self._client_stepper.set_forms(forms)
            self._client_stepper.materialize()
        if restore_groups:
            self.optimizer.load_hyper_parameters(groups)
        if restore_scheduler and scheduler is not None and self.lr_scheduler is not None \
                and not self._engine_schedules:
            self.lr_scheduler.load_state_dict(scheduler)
        if self._engine_schedules:
            self._write_scheduled_lr()
        return client

    def __getattr__(self, name):
        # Like DeepSpeed's engine: attributes the engine lacks come from the wrapped module.
        try:
            return super().__getattr__(name)
        except AttributeError:
            module = super().__getattr__("module")
            if hasattr(module, name):
                return getattr(module, name)
            raise
