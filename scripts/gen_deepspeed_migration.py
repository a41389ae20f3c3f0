#!/usr/bin/env python3
"""Writes docs/deepspeed_migration.md, "Coming from DeepSpeed", from the code's own tables.

The launcher half reads dsrun's option table (launcher/options.cc) and checks each flag of DeepSpeed's
runner listed below against it. The config half reads the C++ ds_config parser (runtime/config/*.cc and elastic/elastic_config.cc): every key
it reads, accepts without effect, ignores with a warning, refuses or calls deprecated, block by block. The
Python half reads python/dsrt with `ast` (nothing is imported, so neither torch nor a build is needed) and
checks each name of DeepSpeed's public API listed below against what dsrt defines.

    scripts/gen_deepspeed_migration.py           # rewrite the page
    scripts/gen_deepspeed_migration.py --check   # exit 1 when the committed page differs (a CTest runs this)

When the parser gains a function that reads keys, add it to READERS; the script stops until it is there.
"""

import argparse
import ast
import difflib
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "deepspeed_migration.md"

# (file, function, receiver) -> the ds_config block that receiver reads; "" is the top level.
READERS = {
    ("deepspeed_config.cc", "readUnparsedTopLevelKeys", "root"): "",  # the keys: top_level_keys.cc's table
    ("deepspeed_config.cc", "parsePrecision", "root"): "",
    ("deepspeed_config.cc", "parseConfig", "root"): "",
    ("zero_config.cc", "aliasedInt", "zero"): None,  # reads keys its caller names; see CALL_HELPERS
    ("zero_config.cc", "parseOffload", "block"): "zero_optimization.offload_optimizer / offload_param",
    ("zero_config.cc", "applyDeprecatedOffload", "zero"): None,
    ("zero_config.cc", "parseZeroConfig", "root"): "",
    ("zero_config.cc", "parseZeroConfig", "zero"): "zero_optimization",
    ("optimizer_config.cc", "parseBetas", "params"): "optimizer.params",
    ("optimizer_config.cc", "parseAdamParams", "params"): "optimizer.params (Adam, AdamW)",
    ("optimizer_config.cc", "parseSgdParams", "params"): "optimizer.params (SGD)",
    ("optimizer_config.cc", "parseLionParams", "params"): "optimizer.params (Lion)",
    ("optimizer_config.cc", "parseAdagradParams", "params"): "optimizer.params (Adagrad)",
    ("optimizer_config.cc", "parseOptimizerConfig", "block"): "optimizer",
    ("optimizer_config.cc", "parseOptimizerConfig", "params"): "optimizer.params",
    ("precision_config.cc", "parseFp16Config", "block"): "fp16",
    ("precision_config.cc", "parseBf16Config", "block"): "bf16 (or the older bfloat16)",
    ("scheduler_config.cc", "requiredDouble", "params"): None,
    ("scheduler_config.cc", "parseWarmup", "params"): "scheduler.params (WarmupLR, WarmupDecayLR)",
    ("scheduler_config.cc", "parseTotalSteps", "params"): "scheduler.params (WarmupDecayLR, WarmupCosineLR)",
    ("scheduler_config.cc", "parseOneCycle", "params"): "scheduler.params (OneCycle)",
    ("scheduler_config.cc", "parseRangeTest", "params"): "scheduler.params (LRRangeTest)",
    ("scheduler_config.cc", "parseSchedulerConfig", "block"): "scheduler",
    ("scheduler_config.cc", "parseSchedulerConfig", "params"): "scheduler.params (WarmupCosineLR)",
    # Before the switch on the type: every scheduler's params.
    ("scheduler_config.cc", "parseSchedulerConfig", "params", "ignore"): "scheduler.params (every type)",
}

# Helpers whose first argument is a reader and whose string arguments are keys of its block.
CALL_HELPERS = {
    "aliasedInt": ("read", "zero_optimization"),
    "applyDeprecatedOffload": ("deprecated-offload", "zero_optimization"),
    "requiredDouble": ("read", "scheduler.params (OneCycle)"),
}

# Keys with no JsonReader call of their own (read straight from the document).
EXTRA_KEYS = [
    ("", "elasticity", "read", "see the `elasticity` block below"),
]

# Where dsrt behaves differently from DeepSpeed for a key it reads; shown in the notes column.
# (status or None to keep the parser's, note).
KEY_NOTES = {
    ("", "communication_data_type"): (None, "fp32, fp16 or bf16"),
    ("", "zero_optimization"): ("read", "an object; DeepSpeed's old boolean form is deprecated (true is stage 1)"),
    ("", "allgather_size"): (None, "only with the old boolean `zero_optimization`"),
    ("", "bfloat16"): (None, "use bf16; ignored when bf16 is given too"),
    ("optimizer", "type"): ("different", "Adam, AdamW, SGD, Lion or Adagrad (any case); DeepSpeed's other optimizers "
                                  "(Lamb, OneBitAdam, ZeroOneAdam, OneBitLamb, MuAdam, Muon, ...) are an error that "
                                  "says why and names the choices"),
    ("scheduler", "type"): (None, "WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle or LRRangeTest (any case)"),
    ("zero_optimization.offload_optimizer / offload_param", "device"): ("read", "none or cpu; nvme is an error"),
    ("zero_optimization.offload_optimizer / offload_param", "ratio"):
        (None, "offload_optimizer only; below 1 needs stage 3"),
    ("scheduler.params (WarmupLR, WarmupDecayLR)", "warmup_type"):
        ("different", "log or linear; another value is an error (DeepSpeed warns and uses log)"),
    ("optimizer.params (Adam, AdamW)", "amsgrad"):
        ("read", "false only: true is an error (DeepSpeed's FusedAdam refuses it too)"),
}

_CALL = re.compile(r"\b(\w+)(?:\.|->)(getInt|getDouble|getBool|optInt|optDouble|optBool|optChoice|child|has|raw"
                   r"|ignore|deprecated|fail|failValue)\(")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_FUNC = re.compile(r"^[A-Za-z][\w:<>,\s\*&]*?\b(\w+)\((?:[^;]*)\)\s*(?:const\s*)?\{\s*$")


def _functions(text):
    """Yields (function name, body text) for each top-level function definition of a .cc file."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        header = lines[i]
        j = i
        # Signatures may wrap: join lines until the opening brace.
        while not header.rstrip().endswith("{") and not header.rstrip().endswith(";") and j + 1 < len(lines) \
                and j - i < 4 and re.match(r"^[A-Za-z]", lines[i]):
            j += 1
            header += " " + lines[j].strip()
        m = _FUNC.match(header) if re.match(r"^[A-Za-z]", lines[i]) else None
        if m and m.group(1) not in ("if", "for", "while", "switch", "namespace"):
            body, k = [], j + 1
            while k < len(lines) and lines[k] != "}":
                body.append(lines[k])
                k += 1
            yield m.group(1), "\n".join(body)
            i = k + 1
        else:
            i += 1


def _statements(body):
    """Splits a function body into statements, so a call that wraps over lines stays whole."""
    return [s.strip() for s in re.split(r";\s*\n|\{\s*\n|\}\s*\n", body + "\n") if s.strip()]


def _string_list(stmt, start):
    """The string literals of the call that starts at `start` (up to its closing parenthesis)."""
    depth, end = 0, start
    for end in range(stmt.index("(", start), len(stmt)):
        depth += {"(": 1, ")": -1}.get(stmt[end], 0)
        if depth == 0:
            break
    return _STRING.findall(stmt[start:end + 1])


def config_keys():
    """{block: {key: (status, note)}} read from the parser's sources."""
    out = {}

    def put(block, key, status, note=""):
        # One key may meet several calls (amsgrad is read, then refused when true): the strongest wins.
        keys = out.setdefault(block, {})
        old = keys.get(key)
        if old is None or PRIORITY.index(status) < PRIORITY.index(old[0]):
            keys[key] = (status, note or (old[1] if old else ""))
        elif note and not old[1]:
            keys[key] = (old[0], note)

    sources = sorted((ROOT / "runtime" / "config").glob("*.cc"))
    problems = []
    for path in sources:
        text = path.read_text()
        if len(_CALL.findall(text)) != sum(len(_CALL.findall(body)) for _, body in _functions(text)):
            problems.append(f"{path.name}: a key is read outside the functions this script recognises; "
                            "extend _functions() in " + pathlib.Path(__file__).name)
        for func, body in _functions(text):
            loop_keys = []
            for stmt in _statements(body):
                loop = re.search(r"for \(const char\* key : \{(.*)\}\)", stmt, re.S)
                if loop:
                    loop_keys = _STRING.findall(loop.group(1))
                for helper, (kind, block) in CALL_HELPERS.items():
                    if re.search(r"(?<![\w:])" + helper + r"\(\*?\w+,", stmt) and func != helper:
                        names = _string_list(stmt, stmt.index(helper + "("))
                        if kind == "read":
                            for key in names[:2 if helper == "aliasedInt" else 1]:
                                put(block, key, "read", "alias of " + names[1] if helper == "aliasedInt"
                                    and key == names[0] else "")
                        else:
                            put(block, names[0], "deprecated", "use " + names[1] + " (true means device cpu)")
                for m in _CALL.finditer(stmt):
                    recv, verb = m.group(1), m.group(2)
                    strings = _string_list(stmt, m.start(2))
                    if verb == "raw" or (not strings and verb != "has"):
                        continue
                    key_of = (path.name, func, recv)
                    if key_of + (verb,) in READERS:
                        key_of = key_of + (verb,)
                    if key_of not in READERS:
                        problems.append(f"{path.name}: {func}() reads keys through '{recv}'; "
                                        "add it to READERS in " + pathlib.Path(__file__).name)
                        continue
                    block = READERS[key_of]
                    if block is None:
                        continue
                    if verb == "has" and not strings:
                        # `for (const char* key : {...}) block.has(key)` marks the list's keys as known; a key
                        # also read by a get*/opt* call (fp16's loss-scale keys) is "read", which ranks higher.
                        for key in loop_keys:
                            put(block, key, "accepted")
                        continue
                    if verb == "ignore":
                        for key in strings:
                            put(block, key, "ignored")
                    elif verb == "deprecated":
                        put(block, strings[0], "deprecated", "use " + strings[1])
                    elif verb in ("fail", "failValue"):
                        # Only failures that say so are refusals; the rest reject bad values of supported keys.
                        if len(strings) > 1 and "not supported" in strings[1]:
                            put(block, strings[0].split(".")[0], "refused", strings[1])
                    elif verb == "has":
                        put(block, strings[0], "read")
                    elif verb == "optChoice":
                        put(block, strings[0], "read", ", ".join(strings[1:]))
                    else:
                        put(block, strings[0], "read")
    # The top-level keys the parser leaves alone: one table (runtime/config/top_level_keys.cc).
    table = (ROOT / "runtime" / "config" / "top_level_keys.cc").read_text()
    rows = re.findall(r'\{"(\w+)", K::(NotSupported|PythonPackage), "((?:[^"\\]|\\.)*)"\}', table)
    if not rows:
        problems.append("top_level_keys.cc: no {\"key\", K::..., \"note\"} rows found; update "
                        + pathlib.Path(__file__).name)
    for key, support, note in rows:
        put("", key, "python" if support == "PythonPackage" else "ignored", note.replace('\\"', '"'))
    for block, key, status, note in EXTRA_KEYS:
        put(block, key, status, note)
    # The elasticity block is parsed in elastic/, which ds_elastic and the launcher share with libdsrt.
    elastic = (ROOT / "elastic" / "elastic_config.cc").read_text()
    for key in re.findall(r'(?:integerKey\(block, |block\.value\(|block\.find\(|integerValue\(\*\w+, )"(\w+)"',
                          elastic):
        put("elasticity", key, "read")
    if problems:
        sys.exit("\n".join(sorted(set(problems))))
    for (block, key), (status, note) in KEY_NOTES.items():
        if block in out and key in out[block]:
            out[block][key] = (status or out[block][key][0], note)
    return out


PRIORITY = ["refused", "deprecated", "read", "python", "ignored", "accepted"]

STATUS_TEXT = {
    "read": "supported",
    "python": "supported by the Python package",
    "different": "different",
    "accepted": "accepted, no effect",
    "ignored": "not supported: warns and ignores",
    "deprecated": "deprecated: warns, still read",
    "refused": "not supported: error",
}

# ---- Python API ---------------------------------------------------------------------------------------------

# DeepSpeed's public names a training script uses, by module (`deepspeed` is `dsrt`), with a note where dsrt
# behaves differently. The status column comes from python/dsrt.
DEEPSPEED_API = {
    "deepspeed": [
        ("initialize", ""), ("init_distributed", ""), ("add_config_arguments", ""), ("DeepSpeedEngine", ""),
        ("DeepSpeedConfig", ""), ("init_inference", "inference engine"), ("PipelineModule", "pipeline parallelism"),
        ("PipelineEngine", "pipeline parallelism"), ("zero", ""), ("comm", ""), ("checkpointing", ""),
        ("ops", ""), ("accelerator", ""), ("runtime", ""), ("utils", ""), ("elasticity", ""), ("moe", "mixture of experts"),
        ("__version__", "dsrt's own version"), ("get_accelerator", ""), ("log_dist", ""), ("logger", ""),
        ("ADAM_OPTIMIZER", ""), ("LAMB_OPTIMIZER", ""), ("DeepSpeedConfigError", ""), ("profiling", ""),
        ("compression", "only compression.helper"),
        ("DeepSpeedTransformerLayer", "fused transformer kernels"),
        ("DeepSpeedTransformerConfig", "fused transformer kernels"),
        ("replace_transformer_layer", "kernel injection"), ("module_inject", "kernel injection"),
        ("pipe", "pipeline parallelism"),
    ],
    "deepspeed.DeepSpeedEngine": [
        ("forward", ""), ("backward", ""), ("step", ""), ("zero_grad", ""), ("train_batch", "pipeline engine"),
        ("eval_batch", "pipeline engine"), ("save_checkpoint", ""), ("load_checkpoint", ""),
        ("save_16bit_model", ""), ("get_lr", ""), ("get_global_grad_norm", ""),
        ("is_gradient_accumulation_boundary", ""), ("set_gradient_accumulation_boundary", ""),
        ("was_step_applied", ""), ("train_batch_size", ""), ("train_micro_batch_size_per_gpu", ""),
        ("gradient_accumulation_steps", ""), ("set_train_batch_size", ""), ("set_train_micro_batch_size", ""),
        ("zero_optimization_stage", ""), ("zero_optimization", ""), ("zero_optimization_partition_gradients", ""),
        ("zero_optimization_partition_weights", ""), ("gradient_clipping", ""), ("fp16_enabled", ""), ("bfloat16_enabled", ""),
        ("steps_per_print", ""), ("wall_clock_breakdown", ""), ("deepspeed_io", ""), ("global_steps", ""),
        ("global_samples", ""), ("micro_steps", ""), ("skipped_steps", ""), ("module", ""), ("optimizer", ""),
        ("lr_scheduler", ""), ("monitor", ""), ("no_sync", "stages 0 and 1, as DeepSpeed"), ("destroy", ""),
        ("compile", "torch 2.x: the module compiled in place, libdsrt and the ZeRO-3 hooks outside the graph"), ("local_rank", ""),
        ("global_rank", ""), ("world_size", ""), ("train", "torch.nn.Module's"), ("eval", "torch.nn.Module's"),
    ],
    "deepspeed.comm": [
        ("init_distributed", ""), ("is_initialized", ""), ("get_rank", ""), ("get_world_size", ""),
        ("get_local_rank", ""), ("barrier", ""), ("all_reduce", ""), ("broadcast", ""), ("all_gather", ""),
        ("ReduceOp", ""), ("reduce_scatter", ""), ("reduce", ""), ("all_gather_into_tensor", ""),
        ("reduce_scatter_tensor", ""), ("all_to_all_single", ""), ("send", ""), ("recv", ""), ("isend", ""),
        ("irecv", ""), ("new_group", ""), ("destroy_process_group", ""), ("monitored_barrier", ""),
        ("log_summary", "the script's deepspeed.comm ops and the engine's own collectives (monitoring.md)"),
        ("configure", "the comms logger's switches"),
    ],
    "deepspeed.zero": [
        ("Init", ""), ("GatheredParameters", ""), ("register_external_parameter", ""),
        ("unregister_external_parameter", ""), ("MiCS_Init", "MiCS"), ("TiledLinear", ""),
        ("ZeroParamStatus", "a ZeRO-3 parameter's ds_status: NOT_AVAILABLE while released, never INFLIGHT"),
        ("ZeroParamType", ""),
    ],
    "deepspeed.runtime.zero.partition_parameters": [
        ("ZeroParamStatus", ""), ("ZeroParamType", ""), ("GatheredParameters", ""), ("Init", ""),
        ("register_external_parameter", ""),
    ],
    "deepspeed.runtime.zero.offload_config": [("OffloadDeviceEnum", ""), ("OffloadStateTypeEnum", "DeepSpeed 0.16's")],
    "deepspeed.runtime.zero.config": [("ZeroStageEnum", "")],
    "deepspeed.runtime.zero.utils": [("ZeRORuntimeException", "importable; dsrt's ZeRO errors are DsrtError")],
    "deepspeed.runtime.utils": [
        ("set_random_seed", ""), ("see_memory_usage", ""),
        ("clip_grad_norm_", "per-parameter norms raised to norm_type (DeepSpeed 0.19's fix)"),
        ("copy_to_device", ""), ("move_to_device", ""),
    ],
    "deepspeed.runtime.config": [
        ("ADAM_OPTIMIZER", ""), ("ADAMW_OPTIMIZER", ""), ("LAMB_OPTIMIZER", "a name: the engine refuses Lamb"),
        ("ONEBIT_ADAM_OPTIMIZER", "a name: 1-bit optimizers are not built"), ("ONEBIT_LAMB_OPTIMIZER", "a name"),
        ("ZERO_ONE_ADAM_OPTIMIZER", "a name"), ("LION_OPTIMIZER", ""), ("ADAGRAD_OPTIMIZER", ""),
        ("DEEPSPEED_OPTIMIZERS", ""), ("DeepSpeedConfig", "no config object"), ("DeepSpeedConfigError", ""),
    ],
    "deepspeed.runtime.dataloader": [
        ("RepeatingLoader", ""), ("DeepSpeedDataLoader", "deepspeed_io returns a torch DataLoader"),
    ],
    "deepspeed.runtime.activation_checkpointing.checkpointing": [
        ("checkpoint", "the module is deepspeed.checkpointing"), ("configure", ""), ("non_reentrant_checkpoint", ""),
    ],
    "deepspeed.utils.timer": [("SynchronizedWallClockTimer", ""), ("NoopTimer", "")],
    "deepspeed.profiling.flops_profiler": [("FlopsProfiler", ""), ("get_model_profile", "")],
    "deepspeed.compression.helper": [("recursive_getattr", ""), ("recursive_setattr", "")],
    "deepspeed.checkpointing": [
        ("configure", ""), ("is_configured", ""), ("checkpoint", ""), ("non_reentrant_checkpoint", ""),
        ("reset", ""), ("model_parallel_cuda_manual_seed", ""), ("get_cuda_rng_tracker", ""),
    ],
    "deepspeed.ops.adam": [("FusedAdam", ""), ("DeepSpeedCPUAdam", "")],
    "deepspeed.ops.lamb": [("FusedLamb", "steps by itself (plain torch); the engine refuses Lamb (config.md)")],
    "deepspeed.ops.lion": [("FusedLion", ""), ("DeepSpeedCPULion", "")],
    "deepspeed.ops.adagrad": [("DeepSpeedCPUAdagrad", "")],
    "deepspeed.accelerator": [("get_accelerator", "")],
    "deepspeed.elasticity": [
        ("compute_elastic_config", "DeepSpeed 0.14's results (libdsrt's elastic/, as ds_elastic)"),
        ("ELASTICITY", ""), ("ENABLED", ""), ("ENABLED_DEFAULT", ""), ("config", ""), ("constants", ""),
        ("elasticity_enabled", ""), ("ensure_immutable_elastic_config", ""),
    ],
    "deepspeed.elasticity.config": [("ElasticityError", ""), ("ElasticityConfigError", ""),
                                    ("ElasticityIncompatibleWorldSize", "")],
    "deepspeed.runtime.lr_schedules": [
        ("WarmupLR", ""), ("WarmupDecayLR", ""), ("WarmupCosineLR", ""), ("OneCycle", ""), ("LRRangeTest", ""),
        ("VALID_LR_SCHEDULES", ""),
    ],
    "deepspeed.utils": [
        ("logger", ""), ("log_dist", ""), ("print_dist", ""), ("zero_to_fp32", ""),
        ("safe_get_full_fp32_param", "None at stage 0, as DeepSpeed"), ("safe_get_full_grad", ""),
        ("safe_get_full_optimizer_state", "any state name the optimizer keeps"), ("safe_set_full_fp32_param",
        "also writes the model's copy at once (DeepSpeed: at the next step)"), ("safe_set_full_optimizer_state", ""),
        ("safe_set_full_grad", ""),
        ("safe_get_local_fp32_param", "ZeRO-3: this rank's run of dsrt's flat partition (may be empty)"),
        ("safe_get_local_grad", "ZeRO-3, as safe_get_local_fp32_param"),
        ("safe_get_local_optimizer_state", "ZeRO-3, as safe_get_local_fp32_param"), ("safe_set_local_fp32_param", ""),
        ("safe_set_local_grad", ""), ("safe_set_local_optimizer_state", ""),
        ("set_z3_leaf_modules", "before initialize (Accelerate's MoE layers)"), ("unset_z3_leaf_modules", ""),
        ("get_z3_leaf_modules", ""), ("set_z3_leaf_module", ""), ("z3_leaf_module", ""),
        ("RepeatingLoader", ""), ("groups", "tensor, sequence and expert parallel groups"),
    ],
    "deepspeed.utils.zero_to_fp32": [
        ("get_fp32_state_dict_from_zero_checkpoint", ""), ("convert_zero_checkpoint_to_fp32_state_dict", ""),
        ("load_state_dict_from_zero_checkpoint", ""),
    ],
}

# torch.distributed's names that dsrt.comm's module __getattr__ hands through (torch 1.13 and 2.x both have
# them); dsrt.comm says so in its source, and the page marks them as torch's own.
TORCH_DISTRIBUTED = {"reduce_scatter", "reduce", "all_gather_into_tensor", "reduce_scatter_tensor",
                     "all_to_all_single", "send", "recv", "isend", "irecv", "new_group", "destroy_process_group",
                     "monitored_barrier", "ReduceOp"}
NN_MODULE = {"train", "eval"}


def _compat_aliases():
    """The compat package's _ALIASES (deepspeed.<name> -> dsrt.<target>), read without importing it."""
    tree = ast.parse((ROOT / "python" / "deepspeed_compat" / "deepspeed" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_ALIASES" for t in node.targets):
            return ast.literal_eval(node.value)
    return {}


def _module_file(module):
    """The dsrt source file of `module` ("dsrt.<DeepSpeed's path>"), through the compat package's aliases
    (deepspeed.runtime.zero is dsrt.zero)."""
    parts = module.split(".")[1:]
    aliases = _compat_aliases()
    for n in range(len(parts), 0, -1):
        target = aliases.get(".".join(parts[:n]))
        if target is not None:
            parts = target.split(".") + parts[n:]
            break
    base = ROOT / "python" / "dsrt"
    for candidate in (base.joinpath(*parts).with_suffix(".py") if parts else None,
                      base.joinpath(*parts, "__init__.py")):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def _top_level(path):
    """Names a module defines or imports at its top level, and whether it has a module __getattr__."""
    tree = ast.parse(path.read_text())
    names, getattr_hook = set(), False
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
            getattr_hook = getattr_hook or node.name == "__getattr__"
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    package = path.parent if path.name == "__init__.py" else None
    if package is not None:
        names.update(p.stem for p in package.glob("*.py") if p.stem != "__init__")
        names.update(p.name for p in package.iterdir() if (p / "__init__.py").is_file())
    return names, getattr_hook


def _class_members(path, cls):
    """Methods and self.attributes of `cls` in `path`, with those of its bases imported from dsrt modules."""
    tree = ast.parse(path.read_text())
    imported = {a.asname or a.name: node.module for node in tree.body if isinstance(node, ast.ImportFrom)
                and (node.module or "").startswith("dsrt.") for a in node.names}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            members = set()
            for base in node.bases:
                module_path = _module_file(imported[base.id]) if isinstance(base, ast.Name) \
                    and base.id in imported else None
                if module_path is not None:
                    members |= _class_members(module_path, base.id)
            for item in ast.walk(node):
                if isinstance(item, ast.FunctionDef):
                    members.add(item.name)
                elif isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name) \
                        and item.value.id == "self" and isinstance(item.ctx, ast.Store):
                    members.add(item.attr)
            return members
    return set()


def python_api():
    """[(module, name, status, note)]: DeepSpeed's names, then dsrt names DeepSpeed has no counterpart for."""
    rows = []
    engine_members = _class_members(ROOT / "python" / "dsrt" / "engine.py", "DeepSpeedEngine")
    for module, entries in DEEPSPEED_API.items():
        if module == "deepspeed.DeepSpeedEngine":
            for name, note in entries:
                if name in NN_MODULE:
                    rows.append((module, name, "supported", note))
                else:
                    rows.append((module, name, "supported" if name in engine_members else "not supported", note))
            continue
        path = _module_file("dsrt" + module[len("deepspeed"):])
        names, hook = _top_level(path) if path else (set(), False)
        for name, note in entries:
            if name in names and name != "__getattr__":
                rows.append((module, name, "supported", note))
            elif hook and name in TORCH_DISTRIBUTED:
                rows.append((module, name, "supported", "torch.distributed's own, on the engine's group"))
            else:
                rows.append((module, name, "not supported", note))
        # What the dsrt module exports beyond DeepSpeed's names.
        exported = _exported(path) if path else []
        listed = {n for n, _ in entries}
        rows.extend((module, name, "dsrt only", "") for name in sorted(exported) if name not in listed)
    return rows


def _exported(path):
    """The module's __all__, read without importing it."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return ast.literal_eval(node.value)
    return []


# ---- launcher flags ----------------------------------------------------------------------------------------

# The flags of DeepSpeed's runner (deepspeed/launcher/runner.py), with a note where dsrun differs; a third
# field overrides the status of a flag dsrun parses only to refuse it.
DEEPSPEED_FLAGS = [
    ("-H, --hostfile", ""), ("-i, --include", ""), ("-e, --exclude", ""), ("--num_nodes", ""),
    ("--num_gpus, --num_accelerators", ""), ("--min_elastic_nodes", ""), ("--max_elastic_nodes", ""),
    ("--master_port", "`0` picks a free port (local and agent backends)"),
    ("--master_addr", "different", "honoured without a hostfile too (DeepSpeed replaces it by 127.0.0.1)"), ("--node_rank", ""),
    ("--launcher", "different", "adds `ssh` (libssh) and `agent` (dsrun-agent); an unknown name is refused at once"),
    ("--launcher_args", ""), ("--module", ""), ("--no_python", ""), ("--no_local_rank", ""),
    ("--no_ssh_check", ""), ("--no_ssh", ""), ("--force_multi", ""), ("--save_pid", "different", "the file is removed at exit"),
    ("--enable_each_rank_log", ""),
    ("--autotuning", "not supported: error", "the autotuner is DeepSpeed's: run it with DeepSpeed's launcher"),
    ("--elastic_training", "different", "dsrun re-forms the world itself, on the agent and ssh backends "
                                        "([elastic training](elastic_training.md))"),
    ("--bind_cores_to_rank", "different", "`sched_setaffinity`, no numactl and no memory binding"), ("--bind_core_list", ""), ("--ssh_port", ""),
    ("--venv_script", "different", "sourced before each node's launch on pdsh and ssh (DeepSpeed: pdsh only)"),
    ("--comment", "Slurm pass-through"), ("--account", "Slurm pass-through"),
    ("--log_level", "dsrun's own messages"), ("-q, --quiet", "`--log_level error`"),
]

_OPTION = re.compile(r'\(\s*"([a-z_0-9]+)(?:,([A-Za-z]))?"\s*,\s*(?:text\(\)|po::[a-z_]+\(\)[^,]*)\s*,\s*'
                     r'((?:"(?:[^"\\]|\\.)*"\s*)+)\)')


def launcher_flags():
    """[(flag, status, note)]: DeepSpeed's runner flags against dsrun's option table, then dsrun's own."""
    text = (ROOT / "launcher" / "options.cc").read_text()
    deepspeed_part, _, own_part = text.partition("po::options_description own(")
    if not own_part:
        sys.exit("launcher/options.cc: no 'own' options block; update launcher_flags() in "
                 + pathlib.Path(__file__).name)
    known = {m.group(1) for m in _OPTION.finditer(text)}
    rows = []
    for spelling, *rest in DEEPSPEED_FLAGS:
        status, note = (rest[0], rest[1]) if len(rest) == 2 else ("supported", rest[0])
        names = [w.lstrip("-") for w in spelling.split(", ") if w.startswith("--")]
        present = all(n in known for n in names)
        rows.append((spelling, status if present else "not supported", note if present else ""))
    for m in _OPTION.finditer(own_part):
        name, short, helptext = m.group(1), m.group(2), "".join(_STRING.findall(m.group(3)))
        if name in ("help", "version"):
            continue
        flag = (f"-{short}, " if short else "") + f"--{name}"
        rows.append((flag, "dsrun only", helptext.replace("|", "\\|")))
    return rows


# ---- page ---------------------------------------------------------------------------------------------------

INTRO = """# Coming from DeepSpeed

A DeepSpeed job moves to dsrun in two changes:
- Launch with `dsrun` where you ran `deepspeed`. The flags, hostfile format and environment are DeepSpeed's;
  see [launcher](launcher.md).
- Import `dsrt` where you imported `deepspeed`, with `import dsrt as deepspeed`. The config file stays as it
  is.

This page lists what carries over. It is generated from the code by `scripts/gen_deepspeed_migration.py`, and
a test fails when the page and the code disagree, so the lists below are exact:
- the launcher flags come from dsrun's option table (`launcher/options.cc`);
- the config keys come from the C++ config parser (`runtime/config/`);
- the Python names come from the `dsrt` package (`python/dsrt/`).

What the statuses mean:

| status | meaning |
|---|---|
| supported | read and acted on as DeepSpeed does |
| different | supported, with the difference the notes give |
| accepted, no effect | a valid DeepSpeed key that changes nothing here (NVMe tuning with offload to cpu) |
| deprecated: warns, still read | DeepSpeed's old spelling: a warning names the new key, then the value is used |
| supported by the Python package | the `dsrt` package carries it out (monitors, comms logger, FLOP profiler: [monitoring.md](monitoring.md)); a C++ program is told that it ignores it |
| not supported: warns and ignores | a warning from rank 0 (none for a block with `"enabled": false`), then training goes on without it |
| not supported: error | `initialize` (or dsrun, for a flag) stops with a message naming the key |
| not supported | absent: an unknown flag for dsrun, an `AttributeError` in Python |
| dsrun only, dsrt only | dsrun's or dsrt's own addition |

Warnings look like `[dsrt] warning: ds_config.json: pipeline: not supported by libdsrt, ignored (data parallel
only)`. Nested
keys are written with dots (`zero_optimization.mics_shard_size`). A key that appears nowhere below gets
`<key>: unknown key, ignored`. Such a key is usually a typo, because every DeepSpeed key that dsrt does not
implement is listed here. A value of `"auto"` (as Hugging Face's Trainer writes) or `null` counts as absent.
Wrong values, such as a negative size or an unknown choice, are errors that name the key and the allowed
values. [config](config.md) explains the batch arithmetic and each block.
"""

FLAGS_INTRO = """`dsrun` takes the flags of DeepSpeed's runner, with the same defaults, and adds its own. The flags are
checked against dsrun's option table (`launcher/options.cc`); [launcher](launcher.md) describes each one.
"""

PY_INTRO = """
## Python API

The names a DeepSpeed training script uses, module by module. In the first column, `deepspeed` stands for
`dsrt`. "dsrt only" marks names that dsrt adds. [python](python.md) describes how they behave.
"""


def render():
    keys = config_keys()
    out = [INTRO, "\n## Launcher flags\n", FLAGS_INTRO, "| flag | status | notes |\n|---|---|---|"]
    out.extend(f"| `{flag}` | {status} | {note} |" for flag, status, note in launcher_flags())
    out.append("\n## Config keys\n")
    order = sorted(keys, key=lambda b: (b != "", b))
    for block in order:
        name, _, qualifier = block.partition(" (")
        title = "top level" if block == "" else f"`{name}`" + (f" ({qualifier}" if qualifier else "")
        out.append(f"\n### {title}\n")
        out.append("| key | status | notes |\n|---|---|---|")
        for key in sorted(keys[block]):
            status, note = keys[block][key]
            note = note.replace("|", "\\|")
            out.append(f"| `{key}` | {STATUS_TEXT[status]} | {note} |")
    out.append(PY_INTRO)
    current = None
    for module, name, status, note in python_api():
        if module != current:
            out.append(f"\n### `{module}`\n\n| name | status | notes |\n|---|---|---|")
            current = module
        out.append(f"| `{name}` | {status} | {note} |")
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed page is out of date")
    args = parser.parse_args()
    text = render()
    if args.check:
        current = PAGE.read_text() if PAGE.is_file() else ""
        if current != text:
            diff = difflib.unified_diff(current.splitlines(), text.splitlines(), str(PAGE), "generated", lineterm="")
            print("\n".join(list(diff)[:60]))
            print(f"{PAGE.relative_to(ROOT)} is out of date: run scripts/gen_deepspeed_migration.py and commit it",
                  file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
