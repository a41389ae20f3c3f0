"""deepspeed.monitor for dsrt: the tensorboard, csv_monitor and wandb blocks of the ds_config, written as
DeepSpeed writes them (deepspeed/monitor/*.py), from rank 0 only."""

from dsrt.monitor.monitor import Monitor, MonitorMaster

__all__ = ["Monitor", "MonitorMaster"]
