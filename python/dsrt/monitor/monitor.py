"""Monitor and MonitorMaster: DeepSpeed's monitor interface (deepspeed/monitor/monitor.py). The engine hands
MonitorMaster lists of (name, value, step) events; rank 0 passes them to every enabled writer."""

import importlib
from abc import ABC, abstractmethod


def require_package(block, package, hint=""):
    """The module PACKAGE, which the enabled ds_config block BLOCK writes through; ImportError naming both and
    the pip command when it is missing."""
    try:
        return importlib.import_module(package)
    except ImportError as e:
        raise ImportError(f"ds_config \"{block}\" is enabled but the {package} package is not importable "
                          f"({e}): pip install {package}{hint}") from e


class Monitor(ABC):
    """One writer of (name, value, step) events."""

    @abstractmethod
    def __init__(self, monitor_config):
        self.monitor_config = monitor_config

    @abstractmethod
    def write_events(self, event_list):
        pass


class MonitorMaster(Monitor):
    """The writers the config enables, created on rank 0 only (other ranks write nothing, as DeepSpeed's).

    ``monitor_config`` is dsrt.monitor.config.monitor_config()'s value. A writer whose package is missing
    raises ImportError naming the package and the pip command."""

    def __init__(self, monitor_config, rank):
        super().__init__(monitor_config)
        self.enabled = monitor_config.enabled
        self.rank = rank
        self.tb_monitor = self.wandb_monitor = self.csv_monitor = None
        if rank != 0:
            return
        if monitor_config.tensorboard.enabled:
            from dsrt.monitor.tensorboard import TensorBoardMonitor
            self.tb_monitor = TensorBoardMonitor(monitor_config.tensorboard)
        if monitor_config.wandb.enabled:
            from dsrt.monitor.wandb import WandbMonitor
            self.wandb_monitor = WandbMonitor(monitor_config.wandb)
        if monitor_config.csv_monitor.enabled:
            from dsrt.monitor.csv_monitor import CsvMonitor
            self.csv_monitor = CsvMonitor(monitor_config.csv_monitor)

    def writers(self):
        return [m for m in (self.tb_monitor, self.wandb_monitor, self.csv_monitor) if m is not None]

    def write_events(self, event_list):
        if self.rank != 0:
            return
        for writer in self.writers():
            writer.write_events(event_list)

    def close(self):
        for writer in self.writers():
            if hasattr(writer, "close"):
                writer.close()
