"""deepspeed.launcher on dsrun: ``runner`` (the `deepspeed` command)."""
