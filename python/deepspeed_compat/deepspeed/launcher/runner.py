"""deepspeed.launcher.runner on dsrun: the `deepspeed` command is dsrun, which takes DeepSpeed's arguments.

Accelerate imports DEEPSPEED_ENVIRONMENT_NAME from here (the per-user environment file every rank gets; dsrun reads
the same file, launcher/environment.h) and runs `deepspeed --hostfile ... script` for multi-node launches.
"""

import os
import shutil
import sys

# DeepSpeed's name for the environment file, renamed by DS_ENV_FILE (the same rule dsrun follows).
DEEPSPEED_ENVIRONMENT_NAME = os.getenv("DS_ENV_FILE", ".deepspeed_env")


def _dsrun() -> str:
    """dsrun next to this interpreter (the environment dsrt was installed into), else the first on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "dsrun")
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("dsrun")
    if found is None:
        sys.stderr.write(f"deepspeed: dsrun not found next to {sys.executable} nor in PATH\n"
                         "  hint: install dsrt with its launcher (pip install . in the dsrun repository), "
                         "which puts dsrun beside python\n")
        sys.exit(127)
    return found


def main(args=None):
    """Replaces this process with dsrun and the same arguments (its exit status is the command's)."""
    argv = sys.argv[1:] if args is None else list(args)
    dsrun = _dsrun()
    # DeepSpeed's launcher runs the ranks with its own interpreter (sys.executable); dsrun's default is the one it
    # was built for, which need not be this environment's.
    env = dict(os.environ)
    env.setdefault("DSRUN_PYTHON", sys.executable)
    os.execve(dsrun, [dsrun] + argv, env)
