"""The monitor blocks of a ds_config with DeepSpeed's defaults (deepspeed/monitor/config.py)."""

from types import SimpleNamespace

# DeepSpeed's field defaults; a block without "enabled": true is off, as there.
_DEFAULTS = {
    "tensorboard": {"enabled": False, "output_path": "", "job_name": "DeepSpeedJobName"},
    "csv_monitor": {"enabled": False, "output_path": "", "job_name": "DeepSpeedJobName"},
    "wandb": {"enabled": False, "group": None, "team": None, "project": "deepspeed"},
}


def _block(config: dict, key: str, source: str) -> SimpleNamespace:
    given = config.get(key, {})
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise ValueError(f"{source}: {key}: expected an object, got '{given}'")
    unknown = sorted(set(given) - set(_DEFAULTS[key]))
    if unknown:
        raise ValueError(f"{source}: {key}.{unknown[0]}: unknown key (keys: {', '.join(_DEFAULTS[key])})")
    values = dict(_DEFAULTS[key], **given)
    if not isinstance(values["enabled"], bool):
        raise ValueError(f"{source}: {key}.enabled: expected true or false, got '{values['enabled']}'")
    return SimpleNamespace(**values)


def monitor_config(config: dict, source: str) -> SimpleNamespace:
    """tensorboard, csv_monitor and wandb as namespaces with every field; ``enabled`` is true if any is on.
    Raises ValueError naming the key for a malformed block."""
    blocks = {key: _block(config, key, source) for key in _DEFAULTS}
    return SimpleNamespace(enabled=any(b.enabled for b in blocks.values()), **blocks)
