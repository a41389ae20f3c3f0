"""wandb: wandb.init(project, group, entity=team) once, then wandb.log({name: value}, step=step) per event
(deepspeed/monitor/wandb.py). Offline runs work as with DeepSpeed: WANDB_MODE=offline writes ./wandb/."""

from dsrt.monitor.monitor import Monitor, require_package


class WandbMonitor(Monitor):

    def __init__(self, wandb_config):
        super().__init__(wandb_config)
        self.wandb = require_package("wandb", "wandb", " (WANDB_MODE=offline logs without an account)")
        self.enabled = wandb_config.enabled
        self.run = self.wandb.init(project=wandb_config.project, group=wandb_config.group, entity=wandb_config.team)

    def log(self, data, step=None, commit=None):
        return self.wandb.log(data, step=step, commit=commit)

    def write_events(self, event_list):
        for label, value, step in event_list:
            self.log({label: value}, step=step)

    def close(self):
        if self.run is not None:
            self.run.finish()
            self.run = None
