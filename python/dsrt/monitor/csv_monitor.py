"""csv_monitor: one CSV file per event name under OUTPUT_PATH/JOB_NAME, DeepSpeed's layout
(deepspeed/monitor/csv_monitor.py): Train/Samples/lr -> Train_Samples_lr.csv with the header
"step,lr", then one "step,value" row per event."""

import csv
import os

from dsrt.monitor.monitor import Monitor


class CsvMonitor(Monitor):

    def __init__(self, csv_config):
        super().__init__(csv_config)
        self.enabled = csv_config.enabled
        self.log_dir = os.path.join(csv_config.output_path, csv_config.job_name)
        os.makedirs(self.log_dir, exist_ok=True)
        # Like DeepSpeed: the header is written the first time this process writes a name (appending to a
        # file of an earlier run adds a second header, as there).
        self.filenames = set()

    def write_events(self, event_list):
        for name, value, step in event_list:
            header = name.split("/")[-1]
            filename = name.replace("/", "_").replace(" ", "_")
            with open(os.path.join(self.log_dir, filename + ".csv"), "a+", newline="") as f:
                writer = csv.writer(f)
                if filename not in self.filenames:
                    self.filenames.add(filename)
                    writer.writerow(["step", header])
                writer.writerow([step, value])
