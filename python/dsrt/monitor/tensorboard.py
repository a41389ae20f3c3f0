"""tensorboard: add_scalar(name, value, step) through torch.utils.tensorboard's SummaryWriter into
OUTPUT_PATH/JOB_NAME, flushed after each batch of events (deepspeed/monitor/tensorboard.py)."""

import os

from dsrt.monitor.monitor import Monitor, require_package


def _summary_writer_class():
    require_package("tensorboard", "tensorboard")  # torch.utils.tensorboard needs it
    from torch.utils.tensorboard import SummaryWriter
    return SummaryWriter


class TensorBoardMonitor(Monitor):

    def __init__(self, tensorboard_config):
        super().__init__(tensorboard_config)
        writer_class = _summary_writer_class()
        self.enabled = tensorboard_config.enabled
        self.log_dir = os.path.join(tensorboard_config.output_path, tensorboard_config.job_name)
        os.makedirs(self.log_dir, exist_ok=True)
        self.summary_writer = writer_class(log_dir=self.log_dir)

    def write_events(self, event_list, flush=True):
        for event in event_list:
            self.summary_writer.add_scalar(*event)
        if flush:
            self.summary_writer.flush()

    def flush(self):
        self.summary_writer.flush()

    def close(self):
        self.summary_writer.close()
