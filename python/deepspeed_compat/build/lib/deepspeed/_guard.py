"""Refuses a `deepspeed` package mixed with DeepSpeed's own.

pip replaces one `deepspeed` distribution by the other, but DeepSpeed can still sit beside this one: in another
directory of sys.path (user site, PYTHONPATH, an egg-link) or as leftover files after a forced install. Then
importlib.metadata and the import system may each find a different one, and a run would silently mix DeepSpeed's
code with dsrt's. This looks at every `deepspeed` distribution Python can see and refuses to import when any is
not this one, naming where it is and how to fix it.
"""

import importlib.metadata
import os

# Files DeepSpeed ships and this distribution never has: their presence means DeepSpeed's files are here too.
_DEEPSPEED_ONLY = ("ops/op_builder", "runtime/engine.py", "git_version_info.py")


def _is_ours(dist) -> bool:
    return "+dsrt" in (dist.version or "")


def refuse_real_deepspeed():
    """Raises ImportError when DeepSpeed itself is installed beside (or under) the compatibility package."""
    here = os.path.dirname(os.path.abspath(__file__))
    mixed = [f for f in _DEEPSPEED_ONLY if os.path.exists(os.path.join(here, f))]
    if mixed:
        raise ImportError(f"{here}: DeepSpeed's own files ('{mixed[0]}') are inside the dsrt compatibility package "
                          "'deepspeed'\n  hint: pip uninstall -y deepspeed, then reinstall one of them "
                          "(python/deepspeed_compat for dsrt, or DeepSpeed)")
    others = [d for d in importlib.metadata.distributions() if (d.metadata["Name"] or "").lower() == "deepspeed"
              and not _is_ours(d)]
    if others:
        where = getattr(others[0], "_path", "?")
        raise ImportError(f"DeepSpeed {others[0].version} is installed beside the dsrt compatibility package "
                          f"'deepspeed' ({where}): the two cannot share an environment\n  hint: pip uninstall "
                          "deepspeed until neither remains, then install one of them, each in its own environment")
